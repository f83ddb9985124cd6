"""Graph-to-graph passes. `pipeline.run` applies them in their fixed order."""

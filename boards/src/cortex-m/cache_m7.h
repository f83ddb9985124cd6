/* The Cortex-M7's instruction and data caches (Armv7-M ARM B2.2.7, Cortex-M7 TRM 4.2.5). */
#ifndef MC_CACHE_M7_H
#define MC_CACHE_M7_H

/* Invalidate and enable the I-cache and the D-cache (write-back for the cached banks). */
void mc_m7_caches_enable(void);

#endif

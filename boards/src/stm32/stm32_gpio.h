/* STM32 GPIO alternate-function set-up: the same register layout on the F4, F7, L4 and H7
 * (RM0390 7.4, RM0385 6.4, RM0432 8.5, RM0433 11.4); only the ports' base address differs. */
#ifndef MC_STM32_GPIO_H
#define MC_STM32_GPIO_H

#include <stdint.h>

#define MC_GPIO_REG(port_base, off) (*(volatile uint32_t *)((port_base) + (off)))

/* Pin `pin` of the port at `port_base` to alternate function `af`, push-pull, high speed. */
static inline void mc_stm32_gpio_af(uint32_t port_base, uint32_t pin, uint32_t af)
{
    MC_GPIO_REG(port_base, 0x00u) = (MC_GPIO_REG(port_base, 0x00u) & ~(3u << (2u * pin))) | (2u << (2u * pin));
    MC_GPIO_REG(port_base, 0x08u) |= 2u << (2u * pin);   /* OSPEEDR: high speed */
    if (pin < 8u)
        MC_GPIO_REG(port_base, 0x20u) = (MC_GPIO_REG(port_base, 0x20u) & ~(0xFu << (4u * pin))) | (af << (4u * pin));
    else
        MC_GPIO_REG(port_base, 0x24u) = (MC_GPIO_REG(port_base, 0x24u) & ~(0xFu << (4u * (pin - 8u)))) |
                                        (af << (4u * (pin - 8u)));
}

/* The APB prescaler field (PPRE: 0xx = /1, 100 = /2, 101 = /4, 110 = /8, 111 = /16) of a divider. */
#define MC_STM32_PPRE(div) ((div) == 1 ? 0u : (div) == 2 ? 4u : (div) == 4 ? 5u : (div) == 8 ? 6u : 7u)
/* The AHB prescaler field (HPRE: 0xxx = /1, 1000 = /2, 1001 = /4, 1010 = /8, ...) of a divider. */
#define MC_STM32_HPRE(div) ((div) == 1 ? 0u : (div) == 2 ? 8u : (div) == 4 ? 9u : (div) == 8 ? 10u : 11u)

#endif

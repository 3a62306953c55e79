// The ARM CPU features the tables need, from the auxiliary vector the kernel passes every
// process (what the kernel saw in the ID registers and enabled).
#include "kernels/arm/arm_kernels.h"

#if defined(__linux__)
#include <sys/auxv.h>
#endif

namespace nextn::arm {

bool cpu_supports_dotprod() {
#if defined(__linux__)
    constexpr unsigned long kHwcapAsimdDp = 1UL << 20;  // HWCAP_ASIMDDP, <asm/hwcap.h>
    return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#else
    return false;
#endif
}

}  // namespace nextn::arm

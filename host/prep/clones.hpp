// Instruction-set clones for the CPU hot loops. The build targets baseline x86-64 (2-wide SSE2, no
// FMA); the exp-bound loops of NeRV and of the perplexity search run two to four times faster with
// AVX2 and FMA. GCC on x86-64 Linux compiles a function marked ORRERY_CLONES also for x86-64-v3
// (AVX2 + FMA) and x86-64-v4 (AVX-512) and picks one at load time (ifunc); one machine always runs
// the same clone, so results do not depend on the thread count, though they may differ in the last
// bits between machines of different instruction sets. Elsewhere the attribute is empty.
// The helpers such a function calls must be inlined into it to get its instruction set:
// ORRERY_ALWAYS_INLINE.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ORRERY_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ORRERY_CLONES
#endif

#if defined(__GNUC__)
#define ORRERY_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ORRERY_ALWAYS_INLINE inline
#endif

#include "CCRC32C.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#endif

// The reflected Castagnoli polynomial.
#define POLYNOMIAL 0x82F63B78u

// Slicing by eight: table[k][b] is the CRC of byte b followed by k zero bytes.
static uint32_t table[8][256];
static int hardware;
static pthread_once_t once = PTHREAD_ONCE_INIT;
// Set (release) once the tables are built and `hardware` known: 1 for tables, 2 for the instruction. A call reads it
// (acquire) and pays for `pthread_once` only until then.
static atomic_int ready;

static void setUp(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (POLYNOMIAL & (0u - (crc & 1)));
        table[0][byte] = crc;
    }
    for (uint32_t byte = 0; byte < 256; byte++) {
        for (int k = 1; k < 8; k++) table[k][byte] = (table[k - 1][byte] >> 8) ^ table[0][table[k - 1][byte] & 0xFF];
    }
#if defined(__x86_64__)
    unsigned int eax, ebx, ecx, edx;
    hardware = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
    hardware = 1;
#elif defined(__aarch64__) && defined(__linux__)
    hardware = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
    hardware = 0;
#endif
    atomic_store_explicit(&ready, hardware ? 2 : 1, memory_order_release);
}

// 2 when the CPU's instruction is used, 1 for the tables.
static inline int mode(void) {
    int known = atomic_load_explicit(&ready, memory_order_acquire);
    if (known != 0) return known;
    pthread_once(&once, setUp);
    return atomic_load_explicit(&ready, memory_order_acquire);
}

static uint64_t load64(const unsigned char *p) {
    uint64_t word;
    memcpy(&word, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

static uint32_t portable(uint32_t crc, const unsigned char *p, size_t count) {
    while (count >= 8) {
        uint64_t word = load64(p) ^ crc;
        crc = table[7][word & 0xFF] ^ table[6][(word >> 8) & 0xFF] ^ table[5][(word >> 16) & 0xFF]
            ^ table[4][(word >> 24) & 0xFF] ^ table[3][(word >> 32) & 0xFF] ^ table[2][(word >> 40) & 0xFF]
            ^ table[1][(word >> 48) & 0xFF] ^ table[0][word >> 56];
        p += 8;
        count -= 8;
    }
    while (count-- > 0) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t accelerated(uint32_t crc, const unsigned char *p, size_t count) {
    uint64_t wide = crc;
    while (count >= 8) {
        wide = _mm_crc32_u64(wide, load64(p));
        p += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    if (count >= 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        narrow = _mm_crc32_u32(narrow, word);
        p += 4;
        count -= 4;
    }
    if (count >= 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        narrow = _mm_crc32_u16(narrow, half);
        p += 2;
        count -= 2;
    }
    if (count > 0) narrow = _mm_crc32_u8(narrow, *p);
    return narrow;
}
#define HAS_ACCELERATED 1
#elif defined(__aarch64__) && (defined(__ARM_FEATURE_CRC32) || defined(__linux__))
__attribute__((target("crc"))) static uint32_t accelerated(uint32_t crc, const unsigned char *p, size_t count) {
    while (count >= 8) {
        crc = __crc32cd(crc, load64(p));
        p += 8;
        count -= 8;
    }
    if (count >= 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        crc = __crc32cw(crc, word);
        p += 4;
        count -= 4;
    }
    if (count >= 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        crc = __crc32ch(crc, half);
        p += 2;
        count -= 2;
    }
    if (count > 0) crc = __crc32cb(crc, *p);
    return crc;
}
#define HAS_ACCELERATED 1
#endif

uint32_t cellar_crc32c(uint32_t crc, const void *bytes, size_t count) {
#if defined(HAS_ACCELERATED)
    if (mode() == 2) return ~accelerated(~crc, bytes, count);
#else
    (void)mode();
#endif
    return ~portable(~crc, bytes, count);
}

uint32_t cellar_crc32c_portable(uint32_t crc, const void *bytes, size_t count) {
    (void)mode();
    return ~portable(~crc, bytes, count);
}

int cellar_crc32c_uses_hardware(void) { return mode() == 2; }

#ifndef CELLAR_CRC32C_H
#define CELLAR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli, the polynomial iSCSI, ext4 and Btrfs use) of `count` bytes, continuing from `crc` (0 to
/// start). With the CPU's own instruction where it has one (SSE 4.2 on x86-64, the CRC extension on 64-bit Arm),
/// found once at the first call; eight table lookups a word elsewhere.
uint32_t cellar_crc32c(uint32_t crc, const void *bytes, size_t count);

/// `cellar_crc32c` without the CPU's instruction, whatever the CPU: for tests that compare the two.
uint32_t cellar_crc32c_portable(uint32_t crc, const void *bytes, size_t count);

/// 1 when `cellar_crc32c` uses the CPU's instruction, 0 when it uses tables.
int cellar_crc32c_uses_hardware(void);

#endif

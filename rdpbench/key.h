/*
 * key.h - rdpbench's RDP key: from --key FILE by the rule of conf/keyfile.c, or a fixed
 * public one; and the key check HELLO carries, so that two sides with different keys are
 * told so at once instead of seeing MAC drops.
 */
#ifndef PSCLUSTER_RDPBENCH_KEY_H
#define PSCLUSTER_RDPBENCH_KEY_H

#include "rdp.h"

#include <stdint.h>

#define RB_KEY_CHECK 16

/* The key from path: a regular file, not open to group or others, 32..4096 bytes; the key
 * is the BLAKE2b-256 hash of its contents. A file that cannot be used ends the program
 * (status 1, the file and the reason on stderr). */
void rb_key_load(const char *path, unsigned char key[RDP_KEY_BYTES]);
/* The fixed benchmark key (public, not secret). */
void rb_key_fixed(unsigned char key[RDP_KEY_BYTES]);
/* A BLAKE2b check value of the key under a label: equal only for equal keys, reveals
 * nothing of the key. */
void rb_key_check(const unsigned char key[RDP_KEY_BYTES], uint8_t out[RB_KEY_CHECK]);

#endif

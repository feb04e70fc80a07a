// Per-key insert status bits. Mirrors src/status.rs (a Rust test checks that they agree).
// The low byte holds failure bits (the key is NOT in the table); higher bits are information.
#define WM_STATUS_OK 0u
#define WM_STATUS_PROBE_LIMIT 0x1u
#define WM_STATUS_TABLE_FULL 0x2u
#define WM_STATUS_OUT_OF_MEMORY 0x4u
#define WM_STATUS_FAILURE_MASK 0xffu
#define WM_STATUS_UPDATED 0x100u
#define WM_STATUS_SENTINEL_KEY 0x200u
#define WM_STATUS_PRESENT 0x400u

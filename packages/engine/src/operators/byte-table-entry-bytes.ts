/**
 * What a ByteCountTable keeps per key beside its bytes, as counted against a task's memory budget: two
 * probe slots of four int32 (the table is at most half full), and hash, offset, length (int32) and count
 * (float64).
 */
export const BYTE_TABLE_ENTRY_BYTES = 52;

/**
 * Compares two UTF-8 byte strings of `bytes` (at `x`, `xLength` and `y`, `yLength`) in the order their
 * strings compare in JS (`<`: UTF-16 code units, compareKeys' order for strings), without decoding them:
 * byte order is code point order, which UTF-16 order follows except that U+E000–U+FFFF (lead bytes
 * 0xEE, 0xEF) sort after the supplementary planes (0xF0–0xF4, surrogate pairs in UTF-16) — so those two
 * lead bytes are ranked above them. Negative, zero or positive. Well-formed strings only (a lone
 * surrogate has no UTF-8).
 */
export function compareUtf8AsUtf16(bytes: Uint8Array, x: number, xLength: number, y: number, yLength: number): number {
  const n = Math.min(xLength, yLength);
  for (let i = 0; i < n; i++, x++, y++) {
    let p = bytes[x] as number;
    let q = bytes[y] as number;
    if (p === q) continue;
    if (p >= 0xee && p <= 0xef) p += 0x10;
    if (q >= 0xee && q <= 0xef) q += 0x10;
    return p - q;
  }
  return xLength - yLength;
}

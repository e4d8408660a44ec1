/**
 * The Redis Cluster slot of a key, as Redis computes it: batches group calls by it
 * (redis-batch.ts) and cluster routing checks it (cluster-refresh.ts).
 */

/** CRC16-CCITT (XModem), the checksum Redis Cluster maps keys to slots with. */
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/**
 * One byte into a running CRC16 (start from 0). Exported for the bench, which builds keys for
 * chosen slots from it (bench/src/cluster-load.ts), so both use one table.
 */
export function crc16Step(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
}

/** The Redis Cluster slot of `key` (its `{hash tag}` when it has a non-empty one). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) crc = crc16Step(crc, bytes[i]!);
  return crc & 16383;
}

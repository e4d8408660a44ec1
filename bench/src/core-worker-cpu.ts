/** CPU time of another process, for the per-decision and per-request figures. */
import { readFileSync } from 'node:fs';

/** utime + stime of process `pid` in µs, from /proc/<pid>/stat (10 ms clock ticks on Linux). */
export function procCpuUs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

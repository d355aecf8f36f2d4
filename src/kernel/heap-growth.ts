import { setFlagsFromString } from 'node:v8';

/** The node option that sets V8's heap growing factor, as 1 + percent / 100. */
const HEAP_GROWING_FLAG = '--heap-growing-percent';

/**
 * Fixes V8's heap growing factor for this process: after each full collection (Mark-Compact) the old
 * generation's next limit becomes its live size times this factor, instead of a factor V8 derives anew from
 * how fast its collector and the program ran. A service asks for it (ServiceDefinition.heapGrowingPercent)
 * when V8's own choice was measured to make it collect again and again (bench/RESULTS.md, "The seal
 * service's full collections"). Set at run time, as V8 reads the factor at each collection (the heap's
 * sizes, by contrast, are fixed when the process starts); a value the operator gave node itself stays.
 * Returns the percent now in force, and whether it is the operator's.
 */
export function fixHeapGrowth(
  percent: number,
  execArgv: readonly string[] = process.execArgv,
): { percent: number; operator: boolean } {
  const given = [...execArgv].reverse().find((arg) => arg.startsWith(`${HEAP_GROWING_FLAG}=`));
  if (given !== undefined) return { percent: Number(given.slice(HEAP_GROWING_FLAG.length + 1)), operator: true };
  setFlagsFromString(`${HEAP_GROWING_FLAG}=${percent}`);
  return { percent, operator: false };
}

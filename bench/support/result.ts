/**
 * The machine-readable form of a benchmark's figures: one `RESULT {json}` line per goal (docs/design.md,
 * "Performance goals") or per figure with no goal, printed after the human lines. `npm run bench`
 * (bench/run-all.ts) collects them into the table of bench/RESULTS.md.
 */
export const RESULT_PREFIX = 'RESULT ';

export interface Result {
  /** The goal as docs/design.md states it (`ingest, local disk, 8 connections`), or the figure's name. */
  goal: string;
  /** What the goal asks, as written in the table (`≥ 0.9× the floor`); absent for a figure with no goal. */
  target?: string;
  unit: string;
  /** Sealpost's figure. */
  figure: number;
  /** The baseline measured in the same run, and what it is. */
  baseline?: number;
  baselineName?: string;
  /** The floor measured in the same run (the least any implementation does here), and what it is. */
  floor?: number;
  floorName?: string;
  /** The ratio the goal is stated in (to the floor, or to the ceiling), when it is one. */
  ratio?: number;
  /** Whether the goal is met; absent for a figure with no goal. */
  met?: boolean;
  /** A short remark for the table (CPU per message, the range over rounds). */
  note?: string;
}

/** Prints one result line. */
export function printResult(result: Result): void {
  console.log(`${RESULT_PREFIX}${JSON.stringify(result)}`);
}

/** The results among a benchmark's output lines. */
export function parseResults(output: string): Result[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith(RESULT_PREFIX))
    .map((line) => JSON.parse(line.slice(RESULT_PREFIX.length)) as Result);
}

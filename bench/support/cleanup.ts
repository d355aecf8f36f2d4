// Child processes a benchmark started must not outlive it, whether it ends normally, throws or is
// interrupted: each is sent SIGTERM when this process exits (Postfix's master then stops its daemons).
import type { ChildProcess } from 'node:child_process';

const children = new Set<ChildProcess>();

export function stopOnExit<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

process.once('exit', () => {
  for (const child of children) child.kill('SIGTERM');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

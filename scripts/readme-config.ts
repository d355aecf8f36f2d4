// Writes docs/configuration.md from the variable declarations, so the documentation cannot drift from the code
// (`npm run docs`; a test checks that it is current).
import { writeFileSync } from 'node:fs';
import { configurationDoc } from '../src/cli/config.ts';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configurationDoc());

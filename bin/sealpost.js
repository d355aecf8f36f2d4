#!/usr/bin/env node
// The `sealpost` command: TypeScript sources run through tsx, so there is no build step to forget. tsx is a
// development dependency: a production install runs the compiled dist/server/cli/main.js instead.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');

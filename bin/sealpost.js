#!/usr/bin/env node
// The `sealpost` command: TypeScript sources run through tsx, so there is no build step to forget.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');

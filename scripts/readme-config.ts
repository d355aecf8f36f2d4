// Rewrites the variable table in README.md from src/kernel/config.ts, between the two markers, so the
// documentation cannot drift from the code (`npm run docs`; a test checks that it is current).
import { readFileSync, writeFileSync } from 'node:fs';
import { variablesMarkdown } from '../src/kernel/config.ts';

const BEGIN = '<!-- config:begin -->';
const END = '<!-- config:end -->';
const path = new URL('../README.md', import.meta.url);
const readme = readFileSync(path, 'utf8');
const start = readme.indexOf(BEGIN);
const end = readme.indexOf(END);
if (start < 0 || end < start) throw new Error('README.md lacks the config markers');
writeFileSync(path, `${readme.slice(0, start + BEGIN.length)}\n${variablesMarkdown()}\n${readme.slice(end)}`);

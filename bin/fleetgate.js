#!/usr/bin/env node
// Launcher: the CLI is compiled to dist/ by `npm run build` (run by `npm install` and `npm ci`).
import '../dist/cli/run.js';

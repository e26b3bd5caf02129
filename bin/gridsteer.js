#!/usr/bin/env node
// The `gridsteer` command: runs the compiled CLI (npm run build makes dist/).
import '../dist/gslb/cli/main.js';

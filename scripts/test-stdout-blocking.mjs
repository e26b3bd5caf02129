// Preloaded into every test file's process by scripts/run-tests.mjs (the test runner passes
// its --import on to the files it runs). Each file reports its results to the runner over
// its stdout, a pipe, and writes to a pipe are asynchronous on Linux: with --test-force-exit
// the file's process.exit() can drop the last reports still buffered, and the runner then
// counts fewer tests than ran, still exiting 0 (nodejs/node#64833, open in Node 20). A
// blocking pipe writes every report before exit. Measured with 40 files of 50 tests, three
// at a time: 1,979 to 1,999 of 2,000 reported without this, 2,000 in each of 7 runs with it.
import process from 'node:process';

const handle = process.stdout._handle;
if (handle && typeof handle.setBlocking === 'function') handle.setBlocking(true);

// Starts a bench child that runs TypeScript (when cpe's sources are measured, BENCH_CPE_BUILD=src, or before
// compileChildren() ran; otherwise children run the compiled JavaScript, see child.ts). The loader is registered
// in process, not with `--import tsx` on the command line, so process.execArgv stays clean and processes the
// measured code forks (cpe's extraction children) start as they would for a user, instead of loading tsx too.
import { register } from 'tsx/esm/api';

register();
await import('./child-main.ts');

// Starts a bench child without `--import tsx` on the command line: the TypeScript loader is registered in
// process, so process.execArgv stays clean and processes the measured code forks (cpe's extraction children)
// start as they would for a user running the compiled package, instead of loading tsx too.
import { register } from 'tsx/esm/api';

register();
await import('./child-main.ts');

/**
 * The `gridsteer` command. Exit codes: 0 success, 1 failure (bad config, cannot listen,
 * server unreachable or refusing), 2 usage error. Messages go to stderr, results to stdout.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import type { Running } from '../main.js';
import { runExplain } from './explain.js';
import { OPERATOR_COMMANDS, runOperator } from './operator.js';

const USAGE = `usage: gridsteer <command> [options]

commands:
  serve          answer DNS and serve the HTTP API
                   --config FILE        (default: $GRIDSTEER_CONFIG or gridsteer.yaml)
                   --workers N|auto     DNS worker processes; 0 answers in the primary
                   --dns-listen ADDR    host:port, repeatable (overrides dns.listen)
                   --http-listen ADDR   host:port (overrides http.listen)
                   --log-level LEVEL    fatal|error|warn|info|debug|trace|silent
  check-config   validate the configuration and exit (--config FILE)
  explain        why a client gets its answer: explain <client-ip> <name>
                   --type A|AAAA  --subnet CIDR  --server URL  --token T  --json
                   (gridsteer explain --help for more)
  simulate       compare policies on a grid-event scenario, offline: simulate <scenario.yaml>
                   (gridsteer simulate --help for more)
  check-delegation  is the zone delegated to its nodes correctly (the parent's NS set and
                   glue, lame servers, serials)? check-delegation <zone> [--parent IP]
                   [--node IP] [--config FILE] [--json]   (check-delegation --help for more)
  token-hash     read a token on stdin, print its sha256 for a tokens file
  version        print the version
  help [command] this text, or that command's own help (also: gridsteer --help, -h)

operating (against a running server; each takes --server URL --token T --json --help;
           an https server with a private CA or mutual TLS: $GRIDSTEER_CA, $GRIDSTEER_CERT, $GRIDSTEER_KEY):
  status         each region's share, state, TTL cap, next change and reason; the freeze;
                 the plan's alerts
  drain          drain <region> --reason TEXT [--cap 0.3] [--ramp 2m] [--by ISO|+30m]
  undrain        undrain <region> --reason TEXT   (ramps back with slow start)
  force          force <region> up|down [--until ISO|+2h] --reason TEXT   (up needs --until)
  freeze         freeze on|off --reason TEXT [--until ISO|+2h]   (hold automation where it stands)
  distrust       distrust <source> on|off --reason TEXT [--until ISO|+2h]   (a grid source's
                 claims of physical loss no longer bypass the safety limits)
  preview        what would change, changing nothing:
                   preview drain <region> [--cap --ramp --by] | undrain <region>
                   | force <region> up|down [--until] | freeze | shadow
                   | event <region> --type load-shed [--start WHEN] --end WHEN
                 durations: 90s, 2m, 1h30m; WHEN: ISO 8601 with a zone (2026-12-01T14:00Z) or +30m
  windows        recurring windows: windows list | add <id> --regions R --cron EXPR --duration D
                   --reason TEXT [--kind --timezone --cap --blocked --from --until --force]
                   | remove <id> --reason TEXT | skip-next <id> --reason TEXT
  events         grid events and alerts: in force and announced, then the history (ended,
                 replays marked)
  jobs           housekeeping jobs: schedule, this node's next slot, the last run and its outcome
  practice-runs  the practice runs recorded: skipped or aborted and why, finished and restored
  store          the state store: store | store confirm-loss --reason TEXT (confirm a data loss)
  quarantine     stored records held out of planning: quarantine | quarantine release|drop
                 <target> --reason TEXT
`;

/** A usage error: the message and the usage on stderr, exit 2. */
function usage(msg?: string): never {
  if (msg) process.stderr.write(`gridsteer: ${msg}\n`);
  process.stderr.write(USAGE);
  process.exit(2);
}

/** Asked for: the usage on stdout, exit 0. */
function help(): number {
  process.stdout.write(USAGE);
  return 0;
}

/** The commands with a --help of their own; the others are described in USAGE. */
const OWN_HELP = new Set(['explain', 'simulate', 'check-delegation', ...Object.keys(OPERATOR_COMMANDS)]);
const COMMANDS = new Set([...OWN_HELP, 'serve', 'check-config', 'token-hash', 'version', 'help']);

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  // `gridsteer`, `gridsteer --help`, `-h`, `help`: what the user asked for, so stdout and 0.
  if (cmd === undefined || cmd === '--help' || cmd === '-h') return help();
  if (cmd === 'help') {
    const [topic, ...extra] = rest;
    if (topic === undefined) return help();
    if (extra.length > 0) usage(`help takes one command (got ${rest.length}: ${rest.join(' ')})`);
    if (!COMMANDS.has(topic)) usage(`unknown command "${topic}"`);
    if (OWN_HELP.has(topic)) return main([topic, '--help']);
    return help();
  }
  // Commands that talk to a running server take their own options.
  if (cmd === 'explain') return runExplain(rest);
  if (cmd !== undefined && Object.hasOwn(OPERATOR_COMMANDS, cmd)) return runOperator(cmd, rest);
  if (cmd === 'simulate') return (await import('./simulate.js')).runSimulate(rest);
  if (cmd === 'check-delegation') return (await import('./delegation.js')).runCheckDelegation(rest);
  if (!COMMANDS.has(cmd)) usage(`unknown command "${cmd}"`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: {
        config: { type: 'string' },
        workers: { type: 'string' },
        'dns-listen': { type: 'string', multiple: true },
        'http-listen': { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    usage((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) return help();
  const configFile = v.config ?? process.env.GRIDSTEER_CONFIG ?? 'gridsteer.yaml';
  switch (cmd) {
    case 'check-config': {
      // The server's modules load only for the commands that need them: the commands that ask a
      // running server start in about a third of the time (0.5 s rather than 1.4 s).
      const { prepare } = await import('../serve/serving.js');
      const { ConfigError } = await import('../config/load.js');
      const { configWarnings, loadConfigTokens } = await import('../config/ingest.js');
      const { TokenLoadError } = await import('../config/tokens.js');
      try {
        const p = prepare(configFile);
        const c = p.loaded.config;
        // The token table too (http.tokensFile, GRIDSTEER_TOKENS): its grants against the reserved namespaces and each other (ADR 0021).
        const tokens = loadConfigTokens(p.loaded, process.env.GRIDSTEER_TOKENS);
        for (const w of configWarnings(c)) process.stderr.write(`warning: ${w}\n`);
        process.stdout.write(
          `ok ${p.loaded.file}: version ${p.loaded.hash}, ${c.zones.length} zone(s), ${c.names.length} steered name(s), ${p.loaded.regions.length} region(s), ${tokens.size} token(s)\n`,
        );
        return 0;
      } catch (e) {
        if (e instanceof ConfigError || e instanceof TokenLoadError) {
          process.stderr.write(e.message + '\n');
          return 1;
        }
        throw e;
      }
    }
    case 'serve': {
      let workers: number | 'auto' | undefined;
      if (v.workers !== undefined) {
        if (v.workers === 'auto') workers = 'auto';
        else if (/^\d{1,3}$/.test(v.workers)) workers = Number(v.workers);
        else usage(`--workers takes a number or "auto" (got "${v.workers}")`);
      }
      const { startGridSteer } = await import('../main.js');
      const { ConfigError } = await import('../config/load.js');
      let running: Running;
      try {
        running = await startGridSteer({ configFile, workers, dnsListen: v['dns-listen'], httpListen: v['http-listen'], logLevel: v['log-level'] });
      } catch (e) {
        if (e instanceof ConfigError) process.stderr.write(e.message + '\n');
        else process.stderr.write(`gridsteer: cannot start: ${(e as Error).message}\n`);
        return 1;
      }
      process.on('SIGHUP', () => {
        void running.reloadBySignal('SIGHUP');
      });
      const signal = await new Promise<string>((resolve) => {
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
      });
      await running.close(signal);
      return 0;
    }
    case 'token-hash': {
      const { hashToken } = await import('../config/tokens.js');
      const token = readFileSync(0, 'utf8').trim();
      if (!token) usage('token-hash reads the token on standard input');
      process.stdout.write(hashToken(token) + '\n');
      return 0;
    }
    case 'version':
      process.stdout.write(`gridsteer ${version()}\n`);
      return 0;
    default:
      usage(`unknown command "${cmd}"`);
  }
  return 2;
}

/**
 * The last line of defence: an error no command expected (a bug, or a condition not yet mapped
 * to its own message) is one line naming the command and what to do, exit 1; the stack only
 * with GRIDSTEER_DEBUG=1 (README.md#the-command). Every failure a user can cause
 * has its own message before this.
 */
function unexpected(e: unknown): never {
  const err = e instanceof Error ? e : new Error(String(e));
  const debug = process.env.GRIDSTEER_DEBUG !== undefined && !['', '0', 'false'].includes(process.env.GRIDSTEER_DEBUG);
  const cmd = process.argv[2] ?? '';
  const code = (err as NodeJS.ErrnoException).code;
  const what = `${err.message.split('\n')[0]}${code && !err.message.includes(code) ? ` (${code})` : ''}`;
  process.stderr.write(
    debug
      ? `gridsteer: ${cmd} failed unexpectedly: ${err.stack ?? what}\n`
      : `gridsteer: ${cmd} failed unexpectedly: ${what}; this is a bug, please report it (GRIDSTEER_DEBUG=1 prints the stack)\n`,
  );
  process.exit(1);
}

// A throw in a socket or timer callback never reaches main's promise: the same one line for it.
// Not for serve, whose server logs and handles its own failures.
if (process.argv[2] !== 'serve') {
  process.on('uncaughtException', unexpected);
  process.on('unhandledRejection', unexpected);
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  if (code !== 0 || process.argv[2] === 'serve') setTimeout(() => process.exit(code), 100).unref();
}, unexpected);

// e2e-agents: real coding agents and the official JS SDKs, unmodified,
// against two running Tollgates:
//
//   default  the embedded default (sim upstream, all four protocols native)
//   vendor   bin/tollgate-upstream (the in-repo vendor simulators) behind the
//            real openai, anthropic and gemini plugins; each client reaches
//            one model natively and one through reverse translation.
//
// Prints `PASS <case>` / `FAIL <case>: <reason>` per case and
// `N passed, N failed`; exits 1 on any failure. Run by `make e2e-agents`
// after e2e/agents/install.sh; E2E_CASES=<regexp> runs a subset.
// Everything it starts listens on 127.0.0.1 and is stopped on exit.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, waitPort, killGroup, describeError } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const nodeDir = path.resolve(process.env.E2E_NODE_DIR || path.join(root, '.e2e', 'node'));
const runDir = path.join(root, '.e2e', 'run');
const bin = path.join(root, 'bin');
const ADMIN_TOKEN = 'e2e-agents-admin-token';
const UPSTREAM_KEY = 'e2e-agents-upstream-key';
// The model of the organization agent each gateway serves.
const AGENT_MODEL = 'gpt-4o-mini';
const CASE_TIMEOUT_MS = Number(process.env.E2E_CASE_TIMEOUT_MS || 120_000);
const only = process.env.E2E_CASES ? new RegExp(process.env.E2E_CASES) : null;

const children = [];

function spawnLogged(name, cmd, args, env) {
  const log = path.join(runDir, `${name}.log`);
  const fd = fs.openSync(log, 'w');
  const child = spawn(cmd, args, { env, cwd: runDir, detached: true, stdio: ['ignore', 'pipe', fd] });
  fs.closeSync(fd);
  children.push(child);
  child.log = log;
  child.lines = [];
  let buf = '';
  child.stdout.on('data', (c) => {
    fs.appendFileSync(log, c);
    buf += c.toString('utf8');
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      child.lines.push(line);
      child.emit('line', line);
    }
  });
  return child;
}

async function stopAll() {
  await Promise.all(children.map((c) => new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const t = setTimeout(() => killGroup(c, 'SIGKILL'), 10_000);
    c.once('exit', () => { clearTimeout(t); resolve(); });
    killGroup(c, 'SIGTERM');
  })));
}

// The gateway inherits no vendor keys: with one set, the embedded default
// would add a real vendor's channel and call the internet.
function gatewayEnv() {
  const env = { ...process.env, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN };
  for (const k of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'TOLLGATE_CONFIG']) delete env[k];
  return env;
}

async function startGateway(name, config) {
  const dataDir = path.join(runDir, `data-${name}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const args = ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--log-level', 'debug'];
  if (config) {
    const file = path.join(runDir, `${name}.hcl`);
    fs.writeFileSync(file, config);
    args.push('--config', file);
  }
  const child = spawnLogged(`gateway-${name}`, path.join(bin, 'tollgate'), args, gatewayEnv());
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway ${name} did not listen in 30 s (see ${child.log})`)), 30_000);
    const done = (err, v) => { clearTimeout(timer); err ? reject(err) : resolve(v); };
    child.on('line', (line) => {
      const m = /^Tollgate listening on (\S+)/.exec(line);
      if (m) done(null, m[1]);
    });
    child.on('exit', (code) => done(new Error(`gateway ${name} exited (${code}) before listening (see ${child.log})`)));
    child.on('error', (e) => done(e));
  });
  const admin = async (p, body) => {
    const r = await fetch(`${url}/admin/v1${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await r.text();
    if (r.status !== 201 && r.status !== 200) throw new Error(`admin POST ${p}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  const acct = await admin('/accounts', { name: `e2e-agents-${name}` });
  const key = await admin(`/accounts/${acct.id}/keys`, { name: 'e2e-agents' });
  // An organization agent behind its own key (docs/agents-org.md).
  const agent = await admin(`/accounts/${acct.id}/agents`, {
    name: 'e2e help desk', model: AGENT_MODEL, system_prompt: 'You are the help desk of the e2e run. Answer briefly.', temperature: 0.2,
  });
  const agentKey = await admin(`/agents/${agent.id}/keys`, { name: 'e2e agent', spend_cap: '50' });
  return { url, key: key.key, agentKey: agentKey.key, agentModel: AGENT_MODEL, log: child.log };
}

async function startUpstream() {
  const exe = path.join(bin, 'tollgate-upstream');
  if (!fs.existsSync(exe)) throw new Error(`${exe} is missing (make e2e-agents builds it from ./cmd/tollgate-upstream)`);
  const port = await freePort();
  const child = spawnLogged('upstream', exe, ['--listen', `127.0.0.1:${port}`, '--api-key', UPSTREAM_KEY], process.env);
  await waitPort(port, 15_000, () => child.exitCode === null);
  return `http://127.0.0.1:${port}`;
}

// vendorConfig routes each client protocol to one native and one
// translated model. Real model ids are used because the agents change
// their requests by model id (thinking, context management).
export function vendorConfig(upstream) {
  const chan = (name, vendor, protocols, models) => `channel "${name}" {
  vendor    = "${vendor}"
  base_url  = "${upstream}"
  api_key   = "${UPSTREAM_KEY}"
  families  = ["chat"]
  protocols = ${JSON.stringify(protocols)}
  models    = ${JSON.stringify(models)}
}
`;
  const model = (id, owner, extra = '') => `model "${id}" {
  owned_by           = "${owner}"
  family             = "chat"
  default_max_tokens = 8192
  max_output_tokens  = 32000
  timeout            = "10m"
${extra}  price {
    input  = "1"
    output = "5"
  }
}
`;
  return `server {
  listen             = "127.0.0.1:0"
  allow_private_urls = true
}

${chan('anthropic', 'anthropic', ['anthropic_messages'], ['claude-sonnet-4-5', 'claude-sonnet-5'])}
${chan('openai', 'openai', ['openai_chat', 'openai_responses'], ['gpt-5-codex', 'gpt-4o-mini'])}
# Speaks only completions: messages and responses clients reach its models
# through reverse translation.
${chan('openai-chat-only', 'openai', ['openai_chat'], ['claude-haiku-4-5-20251001', 'claude-opus-4-8', 'gpt-5.1-codex'])}
${chan('gemini', 'gemini', ['gemini_native'], ['gemini-2.5-flash'])}
# One channel per protocol that serves only models every client reaches by
# translation (translate_from lists all three others): the whole matrix.
${chan('only-messages', 'anthropic', ['anthropic_messages'], ['m-messages', 'gpt-5.1-codex-max'])}
${chan('only-responses', 'openai', ['openai_responses'], ['m-responses', 'claude-sonnet-4-5-20250929'])}
${chan('only-gemini', 'gemini', ['gemini_native'], ['m-gemini', 'claude-haiku-4-5', 'gpt-5-codex-mini'])}
${chan('only-chat', 'openai', ['openai_chat'], ['m-chat'])}
${model('claude-sonnet-4-5', 'anthropic', '  caps {\n    reasoning = true\n  }\n')}
${model('claude-sonnet-5', 'anthropic', '  caps {\n    reasoning = true\n  }\n')}
${model('claude-haiku-4-5-20251001', 'openai', '  translate_from     = ["anthropic_messages"]\n  caps {\n    reasoning = true\n  }\n')}
${model('claude-opus-4-8', 'openai', '  translate_from     = ["anthropic_messages"]\n  caps {\n    reasoning = true\n  }\n')}
${model('gpt-5-codex', 'openai', '  caps {\n    reasoning = true\n  }\n')}
${model('gpt-5.1-codex', 'openai', '  translate_from     = ["openai_responses"]\n  caps {\n    reasoning = true\n  }\n')}
${model('gpt-4o-mini', 'openai', '  translate_from     = ["gemini_native"]\n')}
${model('gemini-2.5-flash', 'google')}
${['m-messages', 'gpt-5.1-codex-max', 'm-responses', 'claude-sonnet-4-5-20250929', 'm-gemini', 'claude-haiku-4-5', 'gpt-5-codex-mini', 'm-chat']
    .map((id) => model(id, 'matrix', '  translate_from     = ["anthropic_messages", "openai_responses", "gemini_native"]\n  caps {\n    reasoning = true\n  }\n')).join('\n')}`;
}

// targets: which model each client uses on each gateway, by route.
const targets = [
  {
    name: 'default',
    start: () => startGateway('default', null),
    // Claude Code shapes its request by model id: for claude-opus-4-8 it
    // sends adaptive thinking, output_config and a mid-conversation system
    // message, so both kinds are run.
    claude: [{ route: 'native', model: 'claude-sonnet-4-5' }, { route: 'native-opus', model: 'claude-opus-4-8' }],
    codex: [{ route: 'native', model: 'gpt-5-codex' }],
    openai: { chat: [{ route: 'native', model: 'gpt-4o-mini' }], responses: [{ route: 'native', model: 'gpt-5-codex' }] },
    // Not claude-sonnet-4-5: the SDK prints a deprecation notice for it.
    anthropic: [{ route: 'native', model: 'claude-sonnet-5' }],
    gemini: [{ route: 'native', model: 'gemini-2.5-flash' }],
  },
  {
    name: 'vendor',
    start: async () => startGateway('vendor', vendorConfig(await startUpstream())),
    // Claude Code on a completions, a responses and a generate-content
    // upstream; Codex on a completions, a messages and a generate-content one.
    claude: [
      { route: 'native', model: 'claude-sonnet-4-5' },
      { route: 'translated', model: 'claude-haiku-4-5-20251001' },
      { route: 'translated-opus', model: 'claude-opus-4-8' },
      { route: 'translated-responses', model: 'claude-sonnet-4-5-20250929' },
      { route: 'translated-generate-content', model: 'claude-haiku-4-5' },
    ],
    codex: [
      { route: 'native', model: 'gpt-5-codex' },
      { route: 'translated', model: 'gpt-5.1-codex' },
      { route: 'translated-messages', model: 'gpt-5.1-codex-max' },
      { route: 'translated-generate-content', model: 'gpt-5-codex-mini' },
    ],
    // The JS SDKs across the matrix: each client protocol on a model of
    // each other protocol (completions clients are translated by default).
    openai: {
      chat: [
        { route: 'native', model: 'gpt-4o-mini' },
        { route: 'translated-messages', model: 'claude-sonnet-4-5', via: 'openai_chat_to_anthropic_messages' },
        { route: 'translated-generate-content', model: 'gemini-2.5-flash', via: 'openai_chat_to_gemini_native' },
        { route: 'translated-responses', model: 'm-responses', via: 'openai_chat_to_openai_responses' },
      ],
      responses: [
        { route: 'native', model: 'gpt-5-codex' },
        { route: 'translated', model: 'gpt-5.1-codex', via: 'openai_responses_to_openai_chat' },
        { route: 'translated-messages', model: 'm-messages', via: 'openai_responses_to_anthropic_messages' },
        { route: 'translated-generate-content', model: 'm-gemini', via: 'openai_responses_to_gemini_native' },
      ],
    },
    anthropic: [
      { route: 'native', model: 'claude-sonnet-5' },
      { route: 'translated', model: 'claude-haiku-4-5-20251001', via: 'anthropic_messages_to_openai_chat' },
      { route: 'translated-responses', model: 'm-responses', via: 'anthropic_messages_to_openai_responses' },
      { route: 'translated-generate-content', model: 'm-gemini', via: 'anthropic_messages_to_gemini_native' },
    ],
    gemini: [
      { route: 'native', model: 'gemini-2.5-flash' },
      { route: 'translated', model: 'gpt-4o-mini', via: 'gemini_native_to_openai_chat' },
      { route: 'translated-messages', model: 'm-messages', via: 'gemini_native_to_anthropic_messages' },
      { route: 'translated-responses', model: 'm-responses', via: 'gemini_native_to_openai_responses' },
    ],
  },
];

// The case files import the SDKs, which live in nodeDir: copy them there so
// Node resolves their imports from its node_modules.
async function loadCaseModules() {
  const dst = path.join(nodeDir, 'src');
  fs.rmSync(dst, { recursive: true, force: true });
  fs.mkdirSync(path.join(dst, 'cases'), { recursive: true });
  fs.copyFileSync(path.join(here, 'lib.mjs'), path.join(dst, 'lib.mjs'));
  fs.writeFileSync(path.join(dst, 'package.json'), '{"type":"module"}\n');
  const mods = [];
  for (const f of ['gateway.mjs', 'claude-code.mjs', 'codex.mjs', 'sdk-openai.mjs', 'sdk-openai-agent.mjs', 'sdk-anthropic.mjs', 'sdk-genai.mjs']) {
    fs.copyFileSync(path.join(here, 'cases', f), path.join(dst, 'cases', f));
    mods.push(await import(pathToFileURL(path.join(dst, 'cases', f)).href));
  }
  return mods;
}

function withTimeout(p, ms) {
  let timer;
  return Promise.race([p, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}

async function main() {
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.mkdirSync(runDir, { recursive: true });
  const binDir = path.join(nodeDir, 'node_modules', '.bin');
  const ctx = { runDir, timeoutMs: CASE_TIMEOUT_MS, claude: path.join(binDir, 'claude'), codex: path.join(binDir, 'codex') };
  for (const exe of [ctx.claude, ctx.codex, path.join(bin, 'tollgate')]) {
    if (!fs.existsSync(exe)) throw new Error(`${exe} is missing; run make e2e-agents`);
  }
  const mods = await loadCaseModules();
  let passed = 0;
  let failed = 0;
  for (const t of targets) {
    const list = mods.flatMap((m) => m.cases(ctx, t)).filter((c) => !only || only.test(c.name));
    if (list.length === 0) continue;
    let setupError = null;
    try {
      Object.assign(t, await t.start());
      console.log(`# ${t.name}: Tollgate at ${t.url} (log ${path.relative(root, t.log)})`);
    } catch (e) {
      setupError = `gateway did not start: ${e.message}`;
    }
    for (const c of list) {
      if (setupError) {
        console.log(`FAIL ${c.name}: ${setupError}`);
        failed++;
        continue;
      }
      const started = Date.now();
      try {
        await withTimeout(c.run(), CASE_TIMEOUT_MS + 5_000);
        console.log(`PASS ${c.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
        passed++;
      } catch (e) {
        console.log(`FAIL ${c.name}: ${describeError(e).replace(/\s*\n\s*/g, ' ')}`);
        failed++;
      }
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0;
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { stopAll().finally(() => process.exit(130)); });
}

let ok = false;
try {
  ok = await main();
} catch (e) {
  console.log(`FAIL setup: ${e.message}`);
  console.log('0 passed, 1 failed');
} finally {
  await stopAll();
}
process.exit(ok ? 0 : 1);

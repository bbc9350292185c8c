// Codex (`codex exec`), unmodified, pointed at Tollgate by a config.toml in
// a throw-away CODEX_HOME that defines a custom model provider.
import fs from 'node:fs';
import path from 'node:path';
import { run, check, short, lastLines } from '../lib.mjs';

// configToml is what docs/agents.md tells a user to write.
export function configToml(url, model) {
  return `model = "${model}"
model_provider = "tollgate"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.tollgate]
name = "Tollgate"
base_url = "${url}/v1"
env_key = "TOLLGATE_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
`;
}

function setup(ctx, t, model, name) {
  // Codex refuses to put its helper binaries under /tmp, so CODEX_HOME
  // lives in the run directory.
  const base = path.join(ctx.runDir, 'codex', name);
  const home = path.join(base, 'home');
  const codexHome = path.join(base, 'codex-home');
  const work = path.join(base, 'work');
  for (const d of [home, codexHome, work]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(codexHome, 'config.toml'), configToml(t.url, model));
  fs.writeFileSync(path.join(work, 'README.md'), 'tollgate-e2e readme\n');
  const env = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', CODEX_HOME: codexHome, TOLLGATE_KEY: t.key };
  return { env, work };
}

// Codex reports a missing model catalogue entry for a custom provider's
// model as an error item; it is its own notice, not an answer from the gateway.
const notice = (m) => /^Model metadata for .* not found/.test(m || '');

async function exec(ctx, t, model, name, prompt) {
  const { env, work } = setup(ctx, t, model, name);
  const res = await run(ctx.codex, ['exec', '--skip-git-repo-check', '--strict-config', '--ephemeral', '--json', prompt],
    { env, cwd: work, timeoutMs: ctx.timeoutMs });
  check(!res.timedOut, `timed out after ${ctx.timeoutMs} ms: ${lastLines(res.stdout + res.stderr)}`);
  const events = res.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const errs = events.filter((e) => e.type === 'error' || e.type === 'turn.failed' || (e.item && e.item.type === 'error' && !notice(e.item.message)));
  check(errs.length === 0, `errors: ${short(errs.map((e) => e.message || (e.error && e.error.message) || (e.item && e.item.message)), 600)}`);
  check(res.code === 0, `exit ${res.code}: ${lastLines(res.stdout + res.stderr)}`);
  check(events.some((e) => e.type === 'turn.completed'), `no turn.completed: ${lastLines(res.stdout)}`);
  const items = events.filter((e) => e.type === 'item.completed').map((e) => e.item);
  const answer = items.filter((i) => i.type === 'agent_message').pop();
  check(answer && answer.text && answer.text.trim() !== '', `no agent message: ${lastLines(res.stdout)}`);
  return items;
}

async function plain(ctx, t, model, name) {
  await exec(ctx, t, model, name, 'Reply with one short sentence about toll roads.');
}

// tool: Codex offers its shell as the function tool exec_command (seen with
// e2e/agents/capture.mjs); the model calls it, Codex runs the command and
// sends the output back, and the next turn answers.
async function tool(ctx, t, model, name, prompt = 'Use the exec_command tool to run: echo tollgate-e2e', want = 'tollgate-e2e') {
  const items = await exec(ctx, t, model, name, prompt);
  const cmd = items.find((i) => i.type === 'command_execution');
  check(cmd, `no command_execution item: ${short(items.map((i) => i.type))}`);
  check(cmd.status === 'completed' && cmd.exit_code === 0, `the command did not succeed: ${short(cmd, 500)}`);
  check(typeof cmd.aggregated_output !== 'string' || cmd.aggregated_output.includes(want), `the output lacks ${want}: ${short(cmd, 500)}`);
}

export function cases(ctx, t) {
  return t.codex.flatMap(({ route, model }) => [
    { name: `codex/${t.name}/${route}/plain`, run: () => plain(ctx, t, model, `${t.name}-${route}-plain`) },
    { name: `codex/${t.name}/${route}/tool`, run: () => tool(ctx, t, model, `${t.name}-${route}-tool`) },
    // Asked in plain words, as a user would: the sim picks exec_command and `ls`.
    { name: `codex/${t.name}/${route}/plain-words-tool`, run: () => tool(ctx, t, model, `${t.name}-${route}-words`, 'list the files of the current directory', 'README.md') },
  ]);
}

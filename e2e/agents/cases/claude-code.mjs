// Claude Code (`claude -p`), unmodified, pointed at Tollgate by environment
// variables only, in a throw-away HOME so no user settings or login leak in.
import fs from 'node:fs';
import path from 'node:path';
import { run, check, short, lastLines } from '../lib.mjs';

const BAD = ['Content block not found', 'API Error', 'API error'];

function env(ctx, t, home) {
  return {
    PATH: process.env.PATH,
    HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    ANTHROPIC_BASE_URL: t.url,
    ANTHROPIC_API_KEY: t.key,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    API_TIMEOUT_MS: String(ctx.timeoutMs),
  };
}

function workspace(ctx, name) {
  const home = path.join(ctx.runDir, 'claude', name, 'home');
  const work = path.join(ctx.runDir, 'claude', name, 'work');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(work, { recursive: true });
  fs.writeFileSync(path.join(work, 'README.md'), 'tollgate-e2e readme\n');
  return { home, work };
}

// resultOK checks Claude Code's closing result message; on an API error its
// `result` holds the gateway's error text.
function resultOK(out) {
  check(out.type === 'result' && out.subtype === 'success' && out.is_error === false,
    `result ${out.subtype}, is_error ${out.is_error}, api_error_status ${out.api_error_status}, terminal_reason ${out.terminal_reason}: ${short(out.result, 600)}`);
}

function noApiErrors(res) {
  for (const b of BAD) {
    check(!res.stdout.includes(b) && !res.stderr.includes(b), `output mentions "${b}": ${lastLines(res.stdout + res.stderr)}`);
  }
}

// plain: one turn, any answer, the JSON result says success.
async function plain(ctx, t, model, name) {
  const { home, work } = workspace(ctx, name);
  const res = await run(ctx.claude, ['-p', 'Reply with one short sentence about toll roads.', '--model', model, '--output-format', 'json', '--no-session-persistence'],
    { env: env(ctx, t, home), cwd: work, timeoutMs: ctx.timeoutMs });
  check(!res.timedOut, `timed out after ${ctx.timeoutMs} ms: ${lastLines(res.stdout + res.stderr)}`);
  let out;
  try { out = JSON.parse(res.stdout); } catch { throw new Error(`exit ${res.code}, stdout is not JSON: ${lastLines(res.stdout + res.stderr)}`); }
  resultOK(out);
  noApiErrors(res);
  check(res.code === 0, `exit ${res.code}: ${lastLines(res.stdout + res.stderr)}`);
  check(typeof out.result === 'string' && out.result.trim() !== '', `empty answer: ${short(out)}`);
}

// tool: the model calls Bash, Claude Code runs it and sends the result back,
// and the next turn ends the run. stream-json shows each message. want is
// a text the tool's result must hold.
async function tool(ctx, t, model, name, prompt = 'Use the Bash tool to run: echo tollgate-e2e', want = 'tollgate-e2e') {
  const { home, work } = workspace(ctx, name);
  const res = await run(ctx.claude, ['-p', prompt, '--model', model,
    '--output-format', 'stream-json', '--verbose', '--no-session-persistence', '--allowedTools', 'Bash', 'Read'],
  { env: env(ctx, t, home), cwd: work, timeoutMs: ctx.timeoutMs });
  check(!res.timedOut, `timed out after ${ctx.timeoutMs} ms: ${lastLines(res.stdout + res.stderr)}`);
  const msgs = res.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const final = msgs.find((m) => m.type === 'result');
  check(final, `exit ${res.code}, no result message: ${lastLines(res.stdout + res.stderr)}`);
  resultOK(final);
  noApiErrors(res);
  check(res.code === 0, `exit ${res.code}: ${lastLines(res.stdout + res.stderr)}`);
  const blocks = (type) => msgs.filter((m) => m.type === type).flatMap((m) => (m.message && Array.isArray(m.message.content) ? m.message.content : []));
  const use = blocks('assistant').find((b) => b.type === 'tool_use');
  check(use, `no tool_use in the assistant messages: ${lastLines(res.stdout)}`);
  check(use.name === 'Bash', `tool_use names ${use.name}, want Bash`);
  const result = blocks('user').find((b) => b.type === 'tool_result' && b.tool_use_id === use.id);
  check(result, `no tool_result for ${use.id}`);
  const text = typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
  check(!result.is_error, `the tool failed: input ${short(use.input)}, result ${short(text)}`);
  check(text.includes(want), `the tool's result lacks ${want}: input ${short(use.input)}, result ${short(text)}`);
  check(final.num_turns >= 2, `want at least 2 turns (tool call, answer), got ${final.num_turns}`);
}

const WIKI_TOOLS = ['search_wiki', 'read_page', 'read_pages', 'list_by_tag', 'backlinks', 'get_source'];

// mcpWiki: the gateway's knowledge base as an HTTP MCP server, added the way
// a user adds it (`claude mcp add --transport http` with the key in a
// header). Claude Code lists the six tools, and a plain request to search
// the wiki makes the model (the sim) call search_wiki; its result (pages of
// the embedded default's `default` base, the project's docs) reaches the
// answer.
async function mcpWiki(ctx, t, model, name) {
  const { home, work } = workspace(ctx, name);
  // Claude Code defers MCP tools behind its ToolSearch tool by default, for
  // a model to look them up first; the sim does not search for tools, so
  // the tools are sent with the request, as they are with few MCP tools.
  const e = { ...env(ctx, t, home), ENABLE_TOOL_SEARCH: 'false' };
  const add = await run(ctx.claude, ['mcp', 'add', '--transport', 'http', 'tollgate', `${t.url}/mcp`,
    '--header', `Authorization: Bearer ${t.key}`], { env: e, cwd: work, timeoutMs: 60_000 });
  check(add.code === 0, `claude mcp add: exit ${add.code}: ${lastLines(add.stdout + add.stderr)}`);
  const list = await run(ctx.claude, ['mcp', 'list'], { env: e, cwd: work, timeoutMs: 60_000 });
  check(list.code === 0 && /tollgate/.test(list.stdout) && /connected/i.test(list.stdout),
    `claude mcp list does not show tollgate connected: ${lastLines(list.stdout + list.stderr)}`);
  const res = await run(ctx.claude, ['-p', 'Search the wiki for idempotency', '--model', model,
    '--output-format', 'stream-json', '--verbose', '--no-session-persistence', '--allowedTools', 'mcp__tollgate__search_wiki'],
  { env: e, cwd: work, timeoutMs: ctx.timeoutMs });
  check(!res.timedOut, `timed out after ${ctx.timeoutMs} ms: ${lastLines(res.stdout + res.stderr)}`);
  const msgs = res.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const init = msgs.find((m) => m.type === 'system' && m.subtype === 'init');
  check(init, `no init message: ${lastLines(res.stdout + res.stderr)}`);
  const server = (init.mcp_servers || []).find((sv) => sv.name === 'tollgate');
  check(server && server.status === 'connected', `the MCP server is not connected: ${short(init.mcp_servers)}`);
  for (const tool of WIKI_TOOLS) {
    check((init.tools || []).includes(`mcp__tollgate__${tool}`), `Claude Code does not list ${tool}: ${short(init.tools, 800)}`);
  }
  const final = msgs.find((m) => m.type === 'result');
  check(final, `exit ${res.code}, no result message: ${lastLines(res.stdout + res.stderr)}`);
  resultOK(final);
  noApiErrors(res);
  check(res.code === 0, `exit ${res.code}: ${lastLines(res.stdout + res.stderr)}`);
  const blocks = (type) => msgs.filter((m) => m.type === type).flatMap((m) => (m.message && Array.isArray(m.message.content) ? m.message.content : []));
  const use = blocks('assistant').find((b) => b.type === 'tool_use');
  check(use && use.name === 'mcp__tollgate__search_wiki', `the model did not call search_wiki: ${short(use)}`);
  check(use.input && use.input.q === 'idempotency', `search_wiki input ${short(use.input)}`);
  const result = blocks('user').find((b) => b.type === 'tool_result' && b.tool_use_id === use.id);
  check(result && !result.is_error, `search_wiki failed: ${short(result)}`);
  const text = typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
  check(text.includes('total_hits') && text.includes('"kb_id":"default"'), `search_wiki's result holds no docs page: ${short(text)}`);
  // The sim's answer quotes the tool result's start.
  check(typeof final.result === 'string' && /has_more|total_hits/.test(final.result), `the answer does not come from the search: ${short(final.result)}`);
}

// cases lists one plain and one tool case per model route of the target.
export function cases(ctx, t) {
  const out = t.claude.flatMap(({ route, model }) => [
    { name: `claude-code/${t.name}/${route}/plain`, run: () => plain(ctx, t, model, `${t.name}-${route}-plain`) },
    { name: `claude-code/${t.name}/${route}/tool`, run: () => tool(ctx, t, model, `${t.name}-${route}-tool`) },
    // Asked in plain words, as a user would: the sim picks Bash and `ls`.
    { name: `claude-code/${t.name}/${route}/plain-words-tool`, run: () => tool(ctx, t, model, `${t.name}-${route}-words`, 'list the files of the current directory', 'README.md') },
  ]);
  // The embedded default ships the `default` knowledge base: its MCP server.
  if (t.name === 'default') {
    const { route, model } = t.claude[0];
    out.push({ name: `claude-code/${t.name}/${route}/mcp-search-wiki`, run: () => mcpWiki(ctx, t, model, `${t.name}-${route}-mcp`) });
  }
  return out;
}

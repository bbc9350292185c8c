// Raw calls agents make besides chat: HEAD / (a liveness probe) and the
// messages path with Claude Code's `?beta=true` query, checked for the
// trace headers the docs promise.
import { check, short } from '../lib.mjs';

async function headRoot(t) {
  const r = await fetch(`${t.url}/`, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
  check(r.status >= 200 && r.status < 300, `HEAD / answered ${r.status}`);
}

async function betaQuery(t, model) {
  const r = await fetch(`${t.url}/v1/messages?beta=true`, {
    method: 'POST',
    signal: AbortSignal.timeout(60_000),
    headers: { 'content-type': 'application/json', 'x-api-key': t.key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219' },
    body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] }),
  });
  const body = await r.text();
  check(r.status === 200, `status ${r.status}: ${short(body)}`);
  const trace = r.headers.get('x-gateway-trace');
  check(trace, 'no x-gateway-trace header');
  check(r.headers.get('x-request-id') === trace, `x-request-id ${r.headers.get('x-request-id')} is not the trace id ${trace}`);
}

export function cases(ctx, t) {
  const out = [{ name: `gateway/${t.name}/head-root`, run: () => headRoot(t) }];
  if (t.anthropic.length) {
    const { model } = t.anthropic[0];
    out.push({ name: `gateway/${t.name}/messages-beta-query`, run: () => betaQuery(t, model) });
  }
  return out;
}

// Helpers shared by the runner and the cases: child processes with a
// deadline that kill their whole process group, free loopback ports, and
// small assertions. Node built-ins only.
import { spawn } from 'node:child_process';
import net from 'node:net';

// run starts cmd and resolves with {code, signal, stdout, stderr, timedOut}
// when it exits or after timeoutMs, when the process group is killed.
export function run(cmd, args, { env, cwd, timeoutMs = 120_000, input } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, cwd, detached: true, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    let timedOut = false;
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => err.push(Buffer.from(String(e))));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

export function killGroup(child, sig) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    try { child.kill(sig); } catch { /* already gone */ }
  }
}

// freePort asks the kernel for a free loopback port.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// waitPort resolves once something accepts TCP connections on port.
export async function waitPort(port, timeoutMs, alive) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (alive && !alive()) throw new Error(`process for port ${port} exited`);
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => { c.destroy(); resolve(true); });
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

// CaseError is a failed expectation (its message is the whole reason). The
// name, not instanceof, identifies it: cases load their own copy of this file.
export class CaseError extends Error {
  constructor(msg) {
    super(msg);
    this.name = 'CaseError';
  }
}

export function check(cond, msg) {
  if (!cond) throw new CaseError(msg);
}

// short renders a value for a failure message, cut to n characters.
export function short(v, n = 300) {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > n ? s.slice(0, n) + '…' : s;
}

// lastLines is the tail of a process's output, for failure reasons.
export function lastLines(s, n = 5) {
  return short(s.trim().split('\n').slice(-n).join(' | '), 600);
}

// describeError turns an SDK error into one line with status, body and
// the gateway's trace id when the SDK exposes them.
export function describeError(e) {
  if (e && e.name === 'CaseError') return e.message;
  const parts = [];
  if (e && e.status) parts.push(`status ${e.status}`);
  const h = e && e.headers;
  const trace = h && (typeof h.get === 'function' ? h.get('x-gateway-trace') : h['x-gateway-trace']);
  if (trace) parts.push(`trace ${trace}`);
  parts.push(short((e && (e.error ? JSON.stringify(e.error) : e.message)) || String(e), 500));
  return parts.join(', ');
}

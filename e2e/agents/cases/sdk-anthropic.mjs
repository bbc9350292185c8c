// The official `@anthropic-ai/sdk`: messages.create, messages.stream with
// finalMessage(), a tool round trip, and count_tokens.
import Anthropic from '@anthropic-ai/sdk';
import { check, short } from '../lib.mjs';

const weather = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const ASK_TOOL = 'Use the get_weather tool to get the weather in Paris.';

function client(t) {
  return new Anthropic({ baseURL: t.url, apiKey: t.key, maxRetries: 0, timeout: 60_000 });
}

function text(msg) {
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

async function create(t, model, via) {
  const { data: m, response } = await client(t).messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] }).withResponse();
  const got = response.headers.get('x-protocol-translation');
  check(got === (via || null), `X-Protocol-Translation ${got}, want ${via || null}`);
  check(m.type === 'message' && m.role === 'assistant', `not a message: ${short(m)}`);
  check(text(m) !== '', `no text: ${short(m.content)}`);
  check(m.stop_reason === 'end_turn', `stop_reason ${m.stop_reason}`);
  check(m.usage && m.usage.input_tokens > 0 && m.usage.output_tokens > 0, `usage: ${short(m.usage)}`);
}

async function stream(t, model) {
  const s = client(t).messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] });
  const events = [];
  let deltas = '';
  s.on('streamEvent', (e) => events.push(e.type));
  s.on('text', (d) => { deltas += d; });
  const m = await s.finalMessage();
  check(events[0] === 'message_start' && events[events.length - 1] === 'message_stop', `events: ${short(events)}`);
  check(events.includes('content_block_start') && events.includes('content_block_stop') && events.includes('message_delta'), `events: ${short(events)}`);
  check(deltas !== '' && text(m) === deltas, `deltas ${short(deltas)} vs final ${short(m.content)}`);
  check(m.stop_reason === 'end_turn', `stop_reason ${m.stop_reason}`);
}

async function tools(t, model, streamed) {
  const c = client(t);
  const messages = [{ role: 'user', content: ASK_TOOL }];
  const req = { model, max_tokens: 512, messages, tools: [weather] };
  const m = streamed ? await c.messages.stream(req).finalMessage() : await c.messages.create(req);
  check(m.stop_reason === 'tool_use', `stop_reason ${m.stop_reason}: ${short(m.content)}`);
  const use = m.content.find((b) => b.type === 'tool_use');
  check(use && use.name === 'get_weather' && use.id, `tool_use: ${short(m.content)}`);
  check(use.input && typeof use.input.city === 'string', `input does not match the schema: ${short(use.input)}`);
  messages.push({ role: 'assistant', content: m.content });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 C, clear sky' }] });
  const m2 = await c.messages.create({ model, max_tokens: 512, messages, tools: [weather] });
  check(m2.stop_reason === 'end_turn' && text(m2) !== '', `after the tool result: ${short(m2)}`);
}

async function countTokens(t, model) {
  const r = await client(t).messages.countTokens({ model, messages: [{ role: 'user', content: 'Say hello to the toll booth operator.' }] });
  check(Number.isInteger(r.input_tokens) && r.input_tokens > 0, `input_tokens: ${short(r)}`);
}

// cases: t.anthropic = [{route, model, via}]; via is the
// X-Protocol-Translation a translated route must carry.
export function cases(ctx, t) {
  return t.anthropic.flatMap(({ route, model, via }) => [
    { name: `anthropic-sdk/${t.name}/${route}/create`, run: () => create(t, model, via) },
    { name: `anthropic-sdk/${t.name}/${route}/stream`, run: () => stream(t, model) },
    { name: `anthropic-sdk/${t.name}/${route}/tools`, run: () => tools(t, model, false) },
    { name: `anthropic-sdk/${t.name}/${route}/tools-stream`, run: () => tools(t, model, true) },
    { name: `anthropic-sdk/${t.name}/${route}/count-tokens`, run: () => countTokens(t, model) },
  ]);
}

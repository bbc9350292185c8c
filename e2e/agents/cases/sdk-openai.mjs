// The official `openai` JS SDK: chat completions (plain, streamed, a tool
// round trip both ways) and responses (plain, streamed, a tool round trip).
import OpenAI from 'openai';
import { check, short } from '../lib.mjs';

const weatherChat = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
};
const weatherResp = { type: 'function', name: 'get_weather', description: weatherChat.function.description, parameters: weatherChat.function.parameters, strict: false };
const ASK_TOOL = 'Use the get_weather tool to get the weather in Paris.';

function client(t) {
  return new OpenAI({ baseURL: `${t.url}/v1`, apiKey: t.key, maxRetries: 0, timeout: 60_000 });
}

function args(raw) {
  let v;
  try { v = JSON.parse(raw); } catch { throw new Error(`tool arguments are not JSON: ${short(raw)}`); }
  check(v && typeof v === 'object' && typeof v.city === 'string', `tool arguments do not match the schema: ${short(raw)}`);
  return v;
}

// translation checks the X-Protocol-Translation header of an answer: via
// for a translated route, none for a native one.
function translation(response, via) {
  const got = response.headers.get('x-protocol-translation');
  check(got === (via || null), `X-Protocol-Translation ${got}, want ${via || null}`);
}

async function chat(t, model, via) {
  const { data: r, response } = await client(t).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello.' }] }).withResponse();
  translation(response, via);
  const c = r.choices[0];
  check(c && typeof c.message.content === 'string' && c.message.content !== '', `no content: ${short(r)}`);
  check(c.finish_reason === 'stop', `finish_reason ${c.finish_reason}`);
  check(r.usage && r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0, `usage: ${short(r.usage)}`);
  check(r._request_id, 'no x-request-id header');
}

async function chatStream(t, model, via) {
  const { data: stream, response } = await client(t).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello.' }], stream: true, stream_options: { include_usage: true } }).withResponse();
  translation(response, via);
  let text = '';
  let finish;
  let usage;
  for await (const ch of stream) {
    if (ch.usage) usage = ch.usage;
    for (const c of ch.choices) {
      text += c.delta.content || '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check(text !== '', 'no streamed text');
  check(finish === 'stop', `finish_reason ${finish}`);
  check(usage && usage.completion_tokens > 0, `no usage chunk: ${short(usage)}`);
}

async function chatTools(t, model, via, stream) {
  const c = client(t);
  const messages = [{ role: 'user', content: ASK_TOOL }];
  let call;
  if (stream) {
    // The SDK's stream helper assembles the tool call from its deltas.
    const s = c.chat.completions.stream({ model, messages, tools: [weatherChat], stream: true });
    const done = await s.finalChatCompletion();
    const m = done.choices[0];
    check(m.finish_reason === 'tool_calls', `finish_reason ${m.finish_reason}: ${short(m.message)}`);
    call = m.message.tool_calls && m.message.tool_calls[0];
    check(call, `no tool call: ${short(m.message)}`);
    messages.push(m.message);
  } else {
    const { data: r, response } = await c.chat.completions.create({ model, messages, tools: [weatherChat] }).withResponse();
    translation(response, via);
    const m = r.choices[0];
    check(m.finish_reason === 'tool_calls', `finish_reason ${m.finish_reason}: ${short(m.message)}`);
    call = m.message.tool_calls && m.message.tool_calls[0];
    check(call, `no tool call: ${short(m.message)}`);
    messages.push(m.message);
  }
  check(call.function.name === 'get_weather', `tool ${call.function.name}`);
  check(call.id, 'tool call without id');
  args(call.function.arguments);
  messages.push({ role: 'tool', tool_call_id: call.id, content: '{"temperature_c": 18, "sky": "clear"}' });
  const r2 = await c.chat.completions.create({ model, messages, tools: [weatherChat] });
  const m2 = r2.choices[0];
  check(m2.finish_reason === 'stop' && m2.message.content, `after the tool result: ${short(m2)}`);
}

async function responses(t, model, via) {
  const { data: r, response } = await client(t).responses.create({ model, input: 'Say hello.' }).withResponse();
  translation(response, via);
  check(r.status === 'completed', `status ${r.status}`);
  check(r.output_text !== '', `no output_text: ${short(r.output)}`);
  check(r.usage && r.usage.output_tokens > 0, `usage: ${short(r.usage)}`);
}

async function responsesStream(t, model) {
  const s = client(t).responses.stream({ model, input: 'Say hello.' });
  const types = [];
  let text = '';
  for await (const e of s) {
    types.push(e.type);
    if (e.type === 'response.output_text.delta') text += e.delta;
  }
  const final = await s.finalResponse();
  check(types[0] === 'response.created', `first event ${types[0]}`);
  const at = (x) => types.indexOf(x);
  check(at('response.output_item.added') >= 0 && at('response.content_part.added') > at('response.output_item.added') &&
    at('response.output_text.delta') > at('response.content_part.added'), `event order: ${short(types)}`);
  check(types[types.length - 1] === 'response.completed', `last event ${types[types.length - 1]}`);
  check(text !== '' && final.output_text === text, `text ${short(text)} vs final ${short(final.output_text)}`);
}

async function responsesTools(t, model) {
  const c = client(t);
  const r = await c.responses.create({ model, input: ASK_TOOL, tools: [weatherResp] });
  const call = r.output.find((o) => o.type === 'function_call');
  check(call, `no function_call: ${short(r.output)}`);
  check(call.name === 'get_weather' && call.call_id, `call: ${short(call)}`);
  args(call.arguments);
  const input = [{ role: 'user', content: ASK_TOOL }, call, { type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c": 18}' }];
  const r2 = await c.responses.create({ model, input, tools: [weatherResp] });
  check(r2.status === 'completed' && r2.output_text !== '', `after the tool output: ${short(r2.output)}`);
}

// cases: t.openai = {chat: [{route, model, via}], responses: [{route, model, via}]};
// via is the X-Protocol-Translation a translated route must carry.
export function cases(ctx, t) {
  const out = [];
  for (const { route, model, via } of t.openai.chat) {
    out.push(
      { name: `openai-sdk/${t.name}/${route}/chat`, run: () => chat(t, model, via) },
      { name: `openai-sdk/${t.name}/${route}/chat-stream`, run: () => chatStream(t, model, via) },
      { name: `openai-sdk/${t.name}/${route}/chat-tools`, run: () => chatTools(t, model, via, false) },
      { name: `openai-sdk/${t.name}/${route}/chat-tools-stream`, run: () => chatTools(t, model, via, true) },
    );
  }
  for (const { route, model, via } of t.openai.responses) {
    out.push(
      { name: `openai-sdk/${t.name}/${route}/responses`, run: () => responses(t, model, via) },
      { name: `openai-sdk/${t.name}/${route}/responses-stream`, run: () => responsesStream(t, model) },
      { name: `openai-sdk/${t.name}/${route}/responses-tools`, run: () => responsesTools(t, model) },
    );
  }
  return out;
}

// The official `openai` JS SDK, unmodified, with an organization agent's
// key (docs/agents-org.md): chat completions plain and streamed, the
// model locked to the agent's whatever the client names, the client's
// tools dropped, and every other route refused with 403.
import OpenAI from 'openai';
import { check, short } from '../lib.mjs';

function client(t) {
  return new OpenAI({ baseURL: `${t.url}/v1`, apiKey: t.agentKey, maxRetries: 0, timeout: 60_000 });
}

const weather = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

async function chat(t) {
  const { data: r, response } = await client(t).chat.completions.create({
    model: 'any-placeholder',
    messages: [{ role: 'user', content: 'Use the get_weather tool to get the weather in Paris.' }],
    tools: [weather],
    tool_choice: 'auto',
  }).withResponse();
  const c = r.choices[0];
  check(r.model === t.agentModel, `model ${r.model}, want the agent's ${t.agentModel}`);
  check(c && c.finish_reason === 'stop' && !c.message.tool_calls && c.message.content, `the client's tools reached the model: ${short(c)}`);
  check(r.usage && r.usage.completion_tokens > 0, `usage: ${short(r.usage)}`);
  check(response.headers.get('x-gateway-trace'), 'no x-gateway-trace header');
}

async function chatStream(t) {
  const stream = await client(t).chat.completions.create({
    model: 'any-placeholder', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'system', content: 'Client rules.' }, { role: 'user', content: 'Say hello.' }],
  }, { headers: { session_id: 'e2e-session' } });
  let text = '';
  let finish;
  let usage;
  let model;
  for await (const ch of stream) {
    model = model || ch.model;
    if (ch.usage) usage = ch.usage;
    for (const c of ch.choices) {
      text += c.delta.content || '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check(text !== '' && finish === 'stop', `stream: ${short({ text, finish })}`);
  check(model === t.agentModel, `stream model ${model}`);
  check(usage && usage.completion_tokens > 0, `no usage chunk: ${short(usage)}`);
}

async function refused(t) {
  const c = client(t);
  for (const [what, call] of [
    ['responses', () => c.responses.create({ model: t.agentModel, input: 'hi' })],
    ['models', () => c.models.list()],
    ['images', () => c.images.generate({ model: 'x', prompt: 'a cat' })],
  ]) {
    let err;
    try { await call(); } catch (e) { err = e; }
    check(err instanceof OpenAI.APIError && err.status === 403, `${what}: ${err ? `${err.status} ${err.message}` : 'answered'}`);
  }
}

export function cases(ctx, t) {
  return [
    { name: `openai-sdk-agent/${t.name}/chat`, run: () => chat(t) },
    { name: `openai-sdk-agent/${t.name}/chat-stream`, run: () => chatStream(t) },
    { name: `openai-sdk-agent/${t.name}/refused`, run: () => refused(t) },
  ];
}

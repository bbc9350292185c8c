// The official `@google/genai` SDK: generateContent, generateContentStream
// and a function-calling round trip, with httpOptions.baseUrl at Tollgate.
import { GoogleGenAI } from '@google/genai';
import { check, short } from '../lib.mjs';

const weather = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] },
};
const ASK_TOOL = 'Use the get_weather tool to get the weather in Paris.';

// client uses the spec's /v1beta paths. The SDK's own default (v1 since
// @google/genai 2.x) is checked by defaultVersion.
function client(t) {
  return new GoogleGenAI({ apiKey: t.key, httpOptions: { baseUrl: t.url, apiVersion: 'v1beta', timeout: 60_000 } });
}

// defaultVersion: the SDK as a user writes it, only baseUrl and apiKey set:
// it calls /v1/models/{model}:generateContent.
async function defaultVersion(t, model, via) {
  const c = new GoogleGenAI({ apiKey: t.key, httpOptions: { baseUrl: t.url, timeout: 60_000 } });
  const r = await c.models.generateContent({ model, contents: 'Say hello.' });
  translation(r, via);
  check(r.text && r.text !== '', `no text: ${short(r)}`);
}

// translation checks the X-Protocol-Translation header the SDK kept in
// sdkHttpResponse: via for a translated route, none for a native one.
function translation(r, via) {
  const h = (r.sdkHttpResponse && r.sdkHttpResponse.headers) || {};
  const got = h['x-protocol-translation'] ?? null;
  check(got === (via || null), `X-Protocol-Translation ${got}, want ${via || null}`);
}

async function generate(t, model, via) {
  const r = await client(t).models.generateContent({ model, contents: 'Say hello.' });
  translation(r, via);
  check(r.text && r.text !== '', `no text: ${short(r)}`);
  const c = r.candidates && r.candidates[0];
  check(c && c.finishReason === 'STOP', `finishReason ${c && c.finishReason}`);
  check(r.usageMetadata && r.usageMetadata.promptTokenCount > 0 && r.usageMetadata.candidatesTokenCount > 0, `usage: ${short(r.usageMetadata)}`);
}

async function generateStream(t, model) {
  const s = await client(t).models.generateContentStream({ model, contents: 'Say hello.' });
  let text = '';
  let chunks = 0;
  let finish;
  let usage;
  for await (const r of s) {
    chunks++;
    text += r.text || '';
    const c = r.candidates && r.candidates[0];
    if (c && c.finishReason) finish = c.finishReason;
    if (r.usageMetadata) usage = r.usageMetadata;
  }
  check(chunks > 0 && text !== '', `no streamed text in ${chunks} chunks`);
  check(finish === 'STOP', `finishReason ${finish}`);
  check(usage && usage.candidatesTokenCount > 0, `usage: ${short(usage)}`);
}

async function tools(t, model, via) {
  const c = client(t);
  const config = { tools: [{ functionDeclarations: [weather] }] };
  const contents = [{ role: 'user', parts: [{ text: ASK_TOOL }] }];
  const r = await c.models.generateContent({ model, contents, config });
  translation(r, via);
  const calls = r.functionCalls || [];
  check(calls.length > 0, `no functionCall: ${short(r.candidates)}`);
  const call = calls[0];
  check(call.name === 'get_weather' && call.args && typeof call.args.city === 'string', `call: ${short(call)}`);
  contents.push(r.candidates[0].content);
  contents.push({ role: 'user', parts: [{ functionResponse: { id: call.id, name: call.name, response: { temperature_c: 18 } } }] });
  const r2 = await c.models.generateContent({ model, contents, config });
  check(r2.text && r2.text !== '' && !(r2.functionCalls && r2.functionCalls.length), `after the function response: ${short(r2.candidates)}`);
}

// cases: t.gemini = [{route, model, via}]; via is the X-Protocol-Translation
// a translated route must carry.
export function cases(ctx, t) {
  return t.gemini.flatMap(({ route, model, via }) => [
    { name: `genai-sdk/${t.name}/${route}/generate`, run: () => generate(t, model, via) },
    { name: `genai-sdk/${t.name}/${route}/generate-stream`, run: () => generateStream(t, model) },
    { name: `genai-sdk/${t.name}/${route}/tools`, run: () => tools(t, model, via) },
    { name: `genai-sdk/${t.name}/${route}/generate-sdk-default-api-version`, run: () => defaultVersion(t, model, via) },
  ]);
}

// A capture server: prints every request a client sends (method, path,
// headers, body) as one JSON line on stderr, and answers the chat paths with
// a minimal valid reply so an agent finishes its turn. Used to see what a
// new client version sends before pointing it at Tollgate:
//
//   node e2e/agents/capture.mjs [port]  # prints "capture listening on http://ADDR"
//
// It needs no packages.
import http from 'node:http';

const port = Number(process.argv[2] || 0);

function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [name, data] of events) {
    res.write((name ? `event: ${name}\n` : '') + `data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function responses(res, body) {
  const id = 'resp_capture';
  const item = { id: 'msg_capture', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'captured', annotations: [] }] };
  const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model: body.model, output: [], status: 'in_progress' };
  const usage = { input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 };
  const events = [
    ['response.created', { type: 'response.created', sequence_number: 0, response: base }],
    ['response.output_item.added', { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...item, status: 'in_progress', content: [] } }],
    ['response.content_part.added', { type: 'response.content_part.added', sequence_number: 2, item_id: item.id, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }],
    ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 3, item_id: item.id, output_index: 0, content_index: 0, delta: 'captured' }],
    ['response.output_text.done', { type: 'response.output_text.done', sequence_number: 4, item_id: item.id, output_index: 0, content_index: 0, text: 'captured' }],
    ['response.content_part.done', { type: 'response.content_part.done', sequence_number: 5, item_id: item.id, output_index: 0, content_index: 0, part: item.content[0] }],
    ['response.output_item.done', { type: 'response.output_item.done', sequence_number: 6, output_index: 0, item }],
    ['response.completed', { type: 'response.completed', sequence_number: 7, response: { ...base, status: 'completed', output: [item], usage } }],
  ];
  if (body.stream) return sse(res, events);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ...base, status: 'completed', output: [item], usage }));
}

function messages(res, body) {
  const msg = { id: 'msg_capture', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...msg, content: [{ type: 'text', text: 'captured' }], stop_reason: 'end_turn' }));
    return;
  }
  sse(res, [
    ['message_start', { type: 'message_start', message: msg }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'captured' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { body = { unparsed: raw.slice(0, 2000) }; }
    process.stderr.write(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }) + '\n');
    const path = req.url.split('?')[0];
    if (req.method === 'POST' && path.endsWith('/responses')) return responses(res, body);
    if (req.method === 'POST' && path.endsWith('/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"input_tokens":1}');
    }
    if (req.method === 'POST' && path.endsWith('/messages')) return messages(res, body);
    if (path.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"object":"list","data":[]}');
    }
    res.writeHead(req.method === 'HEAD' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.method === 'HEAD' ? undefined : '{"error":{"message":"not captured"}}');
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`capture listening on http://127.0.0.1:${server.address().port}`);
});

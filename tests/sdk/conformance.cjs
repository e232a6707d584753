// OpenAI conformance of tt-media-server-go, driven by the official `openai` npm package.
// Run by sdk_test.go (TestNodeSDK), which starts the real tt-media-server binary (mock-device
// mode) in four configurations and sets their base URLs (…/v1):
//   TT_IMAGE_URL    mock SDXL, no latency
//   TT_AUDIO_URL    mock Whisper, no latency, a small MAX_AUDIO_SIZE_BYTES
//   TT_SLOW_URL     mock SDXL, one worker, MAX_QUEUE_SIZE=1, 2 s jobs, 1 s inference timeout
//   TT_WARMING_URL  mock SDXL still warming up (every inference request is a 503)
//   TT_FAULT_URL    in-process server.New whose runner fails the prompt "fault:500" (the one
//                   status the binary cannot be made to answer)
//   TT_API_KEY      their API key
//   TT_WAV          a speech-like WAV file (pauses between bursts)
//   TT_BIG_FILE     a file larger than the audio server's MAX_AUDIO_SIZE_BYTES
// `openai` is resolved through NODE_PATH (installed by tests/sdk/install.sh outside the module).
// Each check prints "ok <name>" or "FAIL <name>: <why>"; the exit status is the failure count.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const OpenAI = require('openai');
const { toFile } = require('openai');

const key = process.env.TT_API_KEY;
const image = new OpenAI({ apiKey: key, baseURL: process.env.TT_IMAGE_URL, maxRetries: 0 });
const audio = new OpenAI({ apiKey: key, baseURL: process.env.TT_AUDIO_URL, maxRetries: 0 });
const slow = new OpenAI({ apiKey: key, baseURL: process.env.TT_SLOW_URL, maxRetries: 0 });
const warming = new OpenAI({ apiKey: key, baseURL: process.env.TT_WARMING_URL, maxRetries: 0 });
const fault = new OpenAI({ apiKey: key, baseURL: process.env.TT_FAULT_URL, maxRetries: 0 });
const wav = fs.readFileSync(process.env.TT_WAV);
const speech = () => toFile(wav, 'speech.wav', { type: 'audio/wav' });

let failures = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`);
  }
}

// expectError runs fn and checks the SDK raised exactly the given class (not a subclass)
// with OpenAI's error fields.
async function expectError(fn, Class, status, fields = {}) {
  let caught;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  return checkError(caught, Class, status, fields);
}

function checkError(caught, Class, status, fields = {}) {
  assert.ok(caught, `expected ${Class.name}, got success`);
  assert.equal(caught.constructor, Class, `expected ${Class.name}, got ${caught.constructor.name}: ${caught.message}`);
  assert.equal(caught.status, status);
  assert.deepEqual(Object.keys(caught.error).sort(), ['code', 'message', 'param', 'type'], JSON.stringify(caught.error));
  for (const [k, v] of Object.entries(fields)) assert.equal(caught[k], v, `${k} of ${JSON.stringify(caught.error)}`);
  return caught;
}

function pngSize(buf) {
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'PNG signature');
  return [buf.readUInt32BE(16), buf.readUInt32BE(20)];
}

function checkSegments(segments, duration) {
  assert.ok(segments.length >= 1);
  segments.forEach((s, i) => {
    assert.deepEqual(Object.keys(s).sort(),
      ['avg_logprob', 'compression_ratio', 'end', 'id', 'no_speech_prob', 'seek', 'start', 'temperature', 'text', 'tokens']);
    assert.equal(s.id, i);
    assert.ok(s.start <= s.end && s.end <= duration + 0.01, `segment ${i} ${s.start}-${s.end} within ${duration}`);
    assert.ok(s.text.startsWith(' '));
    assert.ok(Array.isArray(s.tokens));
  });
}

(async () => {
  await check('models.list image', async () => {
    const ids = [];
    for await (const m of image.models.list()) {
      assert.equal(m.object, 'model');
      assert.equal(m.owned_by, 'tenstorrent');
      ids.push(m.id);
    }
    assert.equal(ids[0], 'stable-diffusion-xl-base-1.0');
    assert.ok(ids.includes('dall-e-3'));
  });
  await check('models.retrieve whisper-1', async () => {
    const m = await audio.models.retrieve('whisper-1');
    assert.equal(m.id, 'whisper-1');
    assert.ok(Number.isInteger(m.created));
  });

  await check('images.generate b64_json (default png)', async () => {
    const res = await image.images.generate({ model: 'dall-e-3', prompt: 'a volcano on a beach', size: '1024x1024', response_format: 'b64_json' });
    assert.ok(Math.abs(res.created - Date.now() / 1000) < 60);
    assert.equal(res.data.length, 1);
    assert.equal(res.output_format, 'png');
    assert.deepEqual(pngSize(Buffer.from(res.data[0].b64_json, 'base64')), [1024, 1024]);
  });
  await check('images.generate n=2 jpeg with extensions', async () => {
    const res = await image.images.generate({ prompt: 'a red fox', n: 2, output_format: 'jpeg', output_compression: 80, seed: 42, steps: 12, negative_prompt: 'blur' });
    assert.equal(res.output_format, 'jpeg');
    assert.equal(res.data.length, 2);
    for (const d of res.data) assert.equal(Buffer.from(d.b64_json, 'base64').subarray(0, 2).toString('hex'), 'ffd8', 'JPEG signature');
    assert.notEqual(res.data[0].b64_json, res.data[1].b64_json, 'seed+i per image');
  });

  await check('images.generate webp with output_compression', async () => {
    const res = await image.images.generate({ prompt: 'a red fox', output_format: 'webp', output_compression: 60 });
    assert.equal(res.output_format, 'webp');
    const b = Buffer.from(res.data[0].b64_json, 'base64');
    assert.equal(b.subarray(0, 4).toString(), 'RIFF');
    assert.equal(b.subarray(8, 12).toString(), 'WEBP');
  });

  await check('transcriptions json', async () => {
    const t = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', language: 'en', temperature: 0 });
    assert.ok(t.text.length > 0);
    assert.equal(t.usage.type, 'duration');
    assert.ok(t.usage.seconds >= 1);
  });
  for (const [format, re] of [
    ['text', /^\S[^\n]*\n$/],
    ['srt', /^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n.+\n\n(\d+\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n.+\n\n)*$/],
    ['vtt', /^WEBVTT\n\n\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n.+\n\n(\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n.+\n\n)*$/],
  ]) {
    await check(`transcriptions ${format}`, async () => {
      const t = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', response_format: format });
      assert.equal(typeof t, 'string');
      assert.match(t, re);
    });
  }
  await check('transcriptions verbose_json (segments, no words)', async () => {
    const t = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', response_format: 'verbose_json' });
    assert.equal(t.task, 'transcribe');
    assert.equal(t.language, 'english');
    assert.ok(t.duration > 0);
    checkSegments(t.segments, t.duration);
    assert.equal(t.words, undefined);
    assert.equal(t.usage.type, 'duration');
    assert.equal(t.text, t.segments.map((s) => s.text.trim()).join(' '));
  });
  await check('transcriptions verbose_json timestamp_granularities [word]', async () => {
    const t = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word'] });
    assert.equal(t.segments, undefined);
    assert.equal(t.words, undefined); // no word timestamps: the device returns no cross-attention
  });
  await check('transcriptions verbose_json timestamp_granularities [word, segment]', async () => {
    const t = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
    checkSegments(t.segments, t.duration);
    assert.equal(t.words, undefined);
  });
  await check('transcriptions stream=true events', async () => {
    const stream = await audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', stream: true });
    const events = [];
    for await (const ev of stream) events.push(ev);
    assert.ok(events.length >= 2);
    assert.equal(events[0].type, 'transcript.text.delta');
    const done = events[events.length - 1];
    assert.equal(done.type, 'transcript.text.done');
    assert.ok(events.slice(0, -1).every((e) => e.type === 'transcript.text.delta'));
    assert.equal(events.slice(0, -1).map((e) => e.delta).join(''), done.text);
    assert.equal(done.usage.type, 'duration');
  });
  await check('translations json and verbose_json', async () => {
    const t = await audio.audio.translations.create({ file: await speech(), model: 'whisper-1' });
    assert.ok(t.text.length > 0);
    const v = await audio.audio.translations.create({ file: await speech(), model: 'whisper-1', response_format: 'verbose_json' });
    assert.equal(v.task, 'translate');
    assert.equal(v.language, 'english');
    checkSegments(v.segments, v.duration);
  });

  // One error per status class the SDK maps.
  await check('400 BadRequestError (size)', async () => {
    const err = await expectError(() => image.images.generate({ prompt: 'x', size: '512x512' }), OpenAI.BadRequestError, 400, { param: 'size', type: 'invalid_request_error', code: null });
    assert.match(err.message, /1024x1024/);
  });
  await check('400 BadRequestError (json + word granularity)', async () => {
    await expectError(async () => audio.audio.transcriptions.create({ file: await speech(), model: 'whisper-1', timestamp_granularities: ['word'] }),
      OpenAI.BadRequestError, 400, { param: 'timestamp_granularities' });
  });
  await check('401 AuthenticationError', async () => {
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: process.env.TT_IMAGE_URL, maxRetries: 0 });
    await expectError(() => bad.models.list(), OpenAI.AuthenticationError, 401, { code: 'invalid_api_key' });
  });
  await check('404 NotFoundError (models.retrieve)', async () => {
    await expectError(() => image.models.retrieve('gpt-5'), OpenAI.NotFoundError, 404, { code: 'model_not_found', param: 'model' });
  });
  await check('404 NotFoundError (transcription model)', async () => {
    await expectError(async () => audio.audio.transcriptions.create({ file: await speech(), model: 'gpt-4o-transcribe' }), OpenAI.NotFoundError, 404, { code: 'model_not_found' });
  });
  await check('413 APIError (upload too large)', async () => {
    const big = await toFile(fs.readFileSync(process.env.TT_BIG_FILE), 'big.wav', { type: 'audio/wav' });
    await expectError(() => audio.audio.transcriptions.create({ file: big, model: 'whisper-1' }), OpenAI.APIError, 413, { type: 'invalid_request_error' });
  });
  await check('400 BadRequestError (not audio, as OpenAI answers)', async () => {
    const txt = await toFile(Buffer.from('plain text, not audio'), 'notes.txt', { type: 'text/plain' });
    await expectError(() => audio.audio.transcriptions.create({ file: txt, model: 'whisper-1' }), OpenAI.BadRequestError, 400, { type: 'invalid_request_error', param: 'file' });
  });
  await check('400 BadRequestError (wrong type is 400, not 422)', async () => {
    await expectError(() => image.images.generate({ prompt: 'x', n: 'two' }), OpenAI.BadRequestError, 400, { param: 'n', type: 'invalid_request_error' });
  });
  await check('404 NotFoundError (unknown /v1 route)', async () => {
    const err = await expectError(() => image.get('/assistants'), OpenAI.NotFoundError, 404, { code: 'not_found', param: null });
    assert.match(err.message, /GET \/v1\/assistants/);
  });
  await check('405 APIError (wrong method)', async () => {
    const err = await expectError(() => image.delete('/models'), OpenAI.APIError, 405, { code: 'method_not_allowed', type: 'invalid_request_error' });
    assert.equal(err.headers.get('allow'), 'GET');
  });
  await check('409 ConflictError (Idempotency-Key reused with another body)', async () => {
    const opts = { headers: { 'Idempotency-Key': 'sdk-node-409' } };
    await image.images.generate({ prompt: 'first', output_format: 'jpeg' }, opts);
    await expectError(() => image.images.generate({ prompt: 'second', output_format: 'jpeg' }, opts), OpenAI.ConflictError, 409, { type: 'invalid_request_error' });
  });
  await check('400 BadRequestError (JSON body, not multipart)', async () => {
    await expectError(() => audio.post('/audio/transcriptions', { body: { model: 'whisper-1' } }), OpenAI.BadRequestError, 400, { type: 'invalid_request_error' });
  });
  await check('429 RateLimitError and 504 InternalServerError (queue of one, 1 s timeout)', async () => {
    // One worker and a queue of one hold two jobs; each takes 2 s against a 1 s timeout.
    // Three requests 50 ms apart: at least one finds both places taken, the admitted ones
    // time out.
    const calls = [];
    for (let i = 0; i < 3; i++) {
      // Settle at once: a 429 arrives while the loop still waits.
      calls.push(slow.images.generate({ prompt: 'slow' }).then((res) => ({ res }), (err) => ({ err })));
      await new Promise((r) => setTimeout(r, 50));
    }
    const statuses = [];
    for (const { res, err } of await Promise.all(calls)) {
      assert.equal(res, undefined, 'no slow job can finish');
      statuses.push(err.status);
      if (err.status === 429) {
        checkError(err, OpenAI.RateLimitError, 429, { code: 'rate_limit_exceeded', type: 'rate_limit_error' });
        assert.match(err.headers.get('retry-after'), /^[1-9]\d*$/);
        assert.match(err.headers.get('retry-after-ms'), /^[1-9]\d*$/);
        assert.equal(err.headers.get('x-should-retry'), 'true');
      } else {
        checkError(err, OpenAI.InternalServerError, 504, { code: 'timeout', type: 'server_error' });
        assert.equal(err.headers.get('x-should-retry'), 'false');
      }
    }
    assert.ok(statuses.includes(429), `a full queue refuses: ${statuses}`);
    assert.ok(statuses.includes(504), `admitted jobs time out: ${statuses}`);
  });
  await check('500 InternalServerError, not retried', async () => {
    const err = await expectError(() => fault.images.generate({ prompt: 'fault:500' }), OpenAI.InternalServerError, 500, { type: 'server_error', code: null });
    assert.equal(err.headers.get('x-should-retry'), 'false');
  });
  await check('503 InternalServerError while warming up, with Retry-After', async () => {
    const err = await expectError(() => warming.images.generate({ prompt: 'x' }), OpenAI.InternalServerError, 503, { type: 'server_error', code: 'service_unavailable' });
    assert.match(err.headers.get('retry-after'), /^[1-9]\d*$/);
    assert.equal(err.headers.get('x-should-retry'), 'true');
  });

  process.exitCode = Math.min(failures, 100);
})();

// Text to speech (/v1/audio/speech) driven by the official `openai` npm package:
// `client.audio.speech.create(...)` for every response_format, and stream_format "sse". Run by
// speech_test.go (TestSpeechSDKs) against the real tt-media-server binary (tt-speecht5-tts in
// mock-device mode):
//   TT_SPEECH_URL  the server's /v1; TT_API_KEY its key; TT_OUT_DIR where the audio is written
//                  (speech.<format>, checked with ffprobe by the Go test)
// Each check prints "ok <name>" or "FAIL <name>: <why>"; the exit status is the failure count.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const OpenAI = require('openai');

const client = new OpenAI({ apiKey: process.env.TT_API_KEY, baseURL: process.env.TT_SPEECH_URL, maxRetries: 0 });
const input = 'Hello from the 2nd speech test. It has two sentences.';

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

const magic = {
  mp3: (b) => b.subarray(0, 3).toString() === 'ID3' || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0),
  opus: (b) => b.subarray(0, 4).toString() === 'OggS',
  aac: (b) => b[0] === 0xff && (b[1] & 0xf6) === 0xf0,
  flac: (b) => b.subarray(0, 4).toString() === 'fLaC',
  wav: (b) => b.subarray(0, 4).toString() === 'RIFF' && b.subarray(8, 12).toString() === 'WAVE',
  pcm: (b) => b.length % 2 === 0,
};

(async () => {
  for (const format of ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']) {
    await check(`audio.speech.create ${format}`, async () => {
      const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input, response_format: format });
      const buf = Buffer.from(await res.arrayBuffer());
      assert.ok(buf.length > 1000, `${buf.length} bytes`);
      assert.ok(magic[format](buf), `${format} signature`);
      fs.writeFileSync(path.join(process.env.TT_OUT_DIR, `speech.${format}`), buf);
    });
  }
  await check('audio.speech.create stream_format sse', async () => {
    const res = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: { id: 'speaker_0100' }, input,
      response_format: 'wav', stream_format: 'sse' });
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    assert.ok(deltas.length >= 1, 'a delta');
    const audio = Buffer.concat(deltas.map((e) => Buffer.from(e.audio, 'base64')));
    assert.ok(magic.wav(audio), 'the deltas make a WAV');
    const done = events[events.length - 1];
    assert.equal(done.type, 'speech.audio.done');
    assert.ok(done.usage.input_tokens > 0 && done.usage.output_tokens > 0, JSON.stringify(done.usage));
    assert.equal(done.usage.total_tokens, done.usage.input_tokens + done.usage.output_tokens);
  });
  await check('audio.speech.create instructions refused', async () => {
    await assert.rejects(client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input, instructions: 'whisper' }),
      (err) => err.status === 400 && err.param === 'instructions');
  });
  process.exit(failures);
})();

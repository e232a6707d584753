// Image streaming (/v1/images/generations with stream: true) driven by the official `openai`
// npm package: `client.images.generate({stream: true, partial_images, ...})` returns a Stream
// of ImageGenStreamEvent. Run by stream_test.go (TestNodeSDKImageStream) against the real
// tt-media-server binary in mock-device mode:
//   TT_IMAGE_URL  mock SDXL, short steps
//   TT_SLOW_URL   mock SDXL, 0.1 s steps and a 1 s inference timeout (a stream that fails
//                 after its first preview)
//   TT_API_KEY    their API key
// `openai` is resolved through NODE_PATH (tests/sdk/install.sh). Each check prints
// "ok <name>" or "FAIL <name>: <why>"; the exit status is the failure count.
'use strict';

const assert = require('node:assert/strict');
const OpenAI = require('openai');

const key = process.env.TT_API_KEY;
const image = new OpenAI({ apiKey: key, baseURL: process.env.TT_IMAGE_URL, maxRetries: 0 });
const slow = new OpenAI({ apiKey: key, baseURL: process.env.TT_SLOW_URL, maxRetries: 0 });

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

// pngSize reads the width and height from a PNG's IHDR chunk.
function pngSize(buf) {
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'PNG signature');
  return [buf.readUInt32BE(16), buf.readUInt32BE(20)];
}

// jpegSize reads the width and height from a baseline JPEG's SOF0 segment.
function jpegSize(buf) {
  assert.equal(buf.subarray(0, 2).toString('hex'), 'ffd8', 'JPEG signature');
  for (let i = 2; i + 9 < buf.length;) {
    assert.equal(buf[i], 0xff, 'JPEG marker');
    const marker = buf[i + 1];
    const len = buf.readUInt16BE(i + 2);
    if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) return [buf.readUInt16BE(i + 7), buf.readUInt16BE(i + 5)];
    i += 2 + len;
  }
  throw new Error('no SOF segment');
}

const common = (ev, format, quality) => {
  assert.equal(ev.output_format, format);
  assert.equal(ev.quality, quality);
  assert.equal(ev.size, '1024x1024');
  assert.equal(ev.background, 'opaque');
  assert.ok(Math.abs(ev.created_at - Date.now() / 1000) < 60, `created_at ${ev.created_at}`);
};

(async () => {
  await check('images.generate stream partial_images=2 (png)', async () => {
    const stream = await image.images.generate({
      model: 'gpt-image-1', prompt: 'a lighthouse at dusk', stream: true, partial_images: 2, size: '1024x1024', seed: 5,
    });
    assert.equal(typeof stream[Symbol.asyncIterator], 'function', 'stream: true returns a Stream');
    const events = [];
    for await (const ev of stream) events.push(ev);
    assert.deepEqual(events.map((e) => e.type),
      ['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
    events.slice(0, 2).forEach((ev, i) => {
      assert.equal(ev.partial_image_index, i);
      assert.deepEqual(pngSize(Buffer.from(ev.b64_json, 'base64')), [256, 256], 'previews are a quarter of the side');
      common(ev, 'png', 'auto');
    });
    const done = events[2];
    common(done, 'png', 'auto');
    assert.deepEqual(pngSize(Buffer.from(done.b64_json, 'base64')), [1024, 1024]);
    assert.equal(done.usage.total_tokens, 0);
    assert.equal(done.usage.input_tokens_details.text_tokens, 0);
    assert.notEqual(events[0].b64_json, events[1].b64_json, 'the previews differ as denoising goes on');
  });

  await check('images.generate stream n=2 jpeg, partial_images=3', async () => {
    const stream = await image.images.generate({
      prompt: 'a red fox', n: 2, stream: true, partial_images: 3, output_format: 'jpeg', quality: 'low', seed: 1,
    });
    const perImage = { 0: [], 1: [] };
    for await (const ev of stream) {
      assert.ok(ev.image_index === 0 || ev.image_index === 1, `image_index ${ev.image_index}`);
      perImage[ev.image_index].push(ev);
      common(ev, 'jpeg', 'low');
    }
    for (const evs of Object.values(perImage)) {
      assert.deepEqual(evs.map((e) => e.partial_image_index), [0, 1, 2, undefined]);
      assert.equal(evs[3].type, 'image_generation.completed');
      assert.deepEqual(jpegSize(Buffer.from(evs[3].b64_json, 'base64')), [1024, 1024]);
    }
    assert.notEqual(perImage[0][3].b64_json, perImage[1][3].b64_json, 'seed+i per image');
  });

  await check('images.generate stream partial_images=0: only the completed event', async () => {
    const stream = await image.images.generate({ prompt: 'x', stream: true, partial_images: 0, output_format: 'jpeg' });
    const types = [];
    for await (const ev of stream) types.push(ev.type);
    assert.deepEqual(types, ['image_generation.completed']);
  });

  await check('images.generate stream: breaking out early is clean', async () => {
    const stream = await image.images.generate({ prompt: 'x', stream: true, partial_images: 3, output_format: 'jpeg', steps: 50 });
    for await (const ev of stream) {
      assert.equal(ev.type, 'image_generation.partial_image');
      break; // aborts the request; the server cancels the job
    }
    const res = await image.images.generate({ prompt: 'y', output_format: 'jpeg' });
    assert.equal(res.data.length, 1, 'the server serves the next request');
  });

  await check('400 BadRequestError (partial_images out of range)', async () => {
    let caught;
    try {
      await image.images.generate({ prompt: 'x', stream: true, partial_images: 4 });
    } catch (err) {
      caught = err;
    }
    assert.ok(caught, 'expected BadRequestError, got success');
    assert.equal(caught.constructor, OpenAI.BadRequestError, `${caught.constructor.name}: ${caught.message}`);
    assert.equal(caught.status, 400);
    assert.equal(caught.param, 'partial_images');
    assert.equal(caught.type, 'invalid_request_error');
  });

  await check('error event mid-stream raises APIError (504 timeout after a preview)', async () => {
    const stream = await slow.images.generate({ prompt: 'x', stream: true, partial_images: 3, output_format: 'jpeg' });
    const types = [];
    let caught;
    try {
      for await (const ev of stream) types.push(ev.type);
    } catch (err) {
      caught = err;
    }
    assert.ok(caught, `expected an APIError, got events ${types}`);
    assert.ok(caught instanceof OpenAI.APIError, `${caught.constructor.name}: ${caught.message}`);
    assert.equal(caught.code, 'timeout');
    assert.equal(caught.type, 'server_error');
    assert.ok(types.length >= 1 && types.every((t) => t === 'image_generation.partial_image'), `events before the error: ${types}`);
  });

  process.exit(failures);
})();

// videos.create, videos.retrieve (polled until completed), videos.downloadContent and
// videos.remix (refused) of the official `openai` npm package against MODEL_RUNNER=tt-wan2.2,
// run by video_test.go (TestNodeSDKVideo): TT_VIDEO_URL (…/v1), TT_API_KEY. Prints
// "ok <name>" or "FAIL <name>: <why>"; the exit status is the failure count.
'use strict';

const assert = require('node:assert/strict');
const OpenAI = require('openai');

const client = new OpenAI({ apiKey: process.env.TT_API_KEY, baseURL: process.env.TT_VIDEO_URL, maxRetries: 0 });
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

(async () => {
  let id;
  await check('videos.create then retrieve until completed', async () => {
    let v = await client.videos.create({ prompt: 'a paper boat on a pond', model: 'tt-wan2.2' });
    assert.equal(v.object, 'video');
    id = v.id;
    const deadline = Date.now() + 45000;
    while (v.status === 'queued' || v.status === 'in_progress') {
      assert.ok(Date.now() < deadline, 'not completed in 45 s');
      await new Promise((r) => setTimeout(r, 50));
      v = await client.videos.retrieve(id);
    }
    assert.equal(v.status, 'completed');
    assert.equal(v.progress, 100);
  });
  await check('videos.downloadContent is an MP4', async () => {
    const res = await client.videos.downloadContent(id);
    const buf = Buffer.from(await res.arrayBuffer());
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    assert.equal(buf.subarray(4, 8).toString('latin1'), 'ftyp');
    assert.ok(buf.indexOf('moov') < buf.indexOf('mdat'), 'moov before mdat');
  });
  await check('videos.remix is a BadRequestError naming it', async () => {
    await assert.rejects(client.videos.remix(id, { prompt: 'again' }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.equal(err.param, 'remix');
      return true;
    });
  });
  process.exit(failures);
})();

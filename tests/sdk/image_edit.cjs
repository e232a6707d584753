// images.edit of the official `openai` npm package against MODEL_RUNNER=tt-sdxl-edit, run by
// edit_test.go (TestNodeSDKImageEdit): TT_EDIT_URL (…/v1), TT_API_KEY, TT_IMAGE_PNG (the image),
// TT_MASK_PNG (a mask of its size whose transparent pixels mark the area), TT_SMALL_MASK_PNG (a
// mask of another size). Prints "ok <name>" or "FAIL <name>: <why>"; the exit status is the
// failure count.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const OpenAI = require('openai');
const { toFile } = require('openai');

const client = new OpenAI({ apiKey: process.env.TT_API_KEY, baseURL: process.env.TT_EDIT_URL, maxRetries: 0 });
const png = (env, name) => toFile(fs.readFileSync(process.env[env]), name, { type: 'image/png' });
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
  await check('images.edit with mask, n=2, b64_json', async () => {
    const res = await client.images.edit({
      image: await png('TT_IMAGE_PNG', 'in.png'), mask: await png('TT_MASK_PNG', 'mask.png'),
      prompt: 'a red square', n: 2, size: '1024x1024', response_format: 'b64_json',
    });
    assert.equal(res.data.length, 2);
    for (const d of res.data) {
      const raw = Buffer.from(d.b64_json, 'base64');
      assert.deepEqual([...raw.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'PNG by default');
    }
  });
  await check('images.edit mask of another size is a 400 on param mask', async () => {
    let caught;
    try {
      await client.images.edit({ image: await png('TT_IMAGE_PNG', 'in.png'), mask: await png('TT_SMALL_MASK_PNG', 'm.png'), prompt: 'x' });
    } catch (err) {
      caught = err;
    }
    assert.ok(caught, 'expected an error');
    assert.equal(caught.constructor, OpenAI.BadRequestError);
    assert.equal(caught.status, 400);
    assert.equal(caught.param, 'mask');
    assert.match(caught.message, /mask is 10x10 but image is 48x48/);
  });
  process.exit(failures);
})();

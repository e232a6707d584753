// Drives the server's browser pages in Debian's chromium with playwright-core; run by
// web_test.go, which starts one server per model family. One browser session visits them all
// (a chromium start costs seconds). Environment:
//   TT_IMAGE_URL   a server with MODEL_RUNNER=tt-sdxl-trace, e.g. http://127.0.0.1:8123
//   TT_AUDIO_URL   a server with MODEL_RUNNER=tt-whisper
//   TT_CNN_URL     a server with MODEL_RUNNER=tt-xla-resnet (also used for /docs)
//   TT_SPEECH_URL  a server with MODEL_RUNNER=tt-speecht5-tts
//   TT_VIDEO_URL   a server with MODEL_RUNNER=tt-wan2.2
//   TT_WAV, TT_PNG the audio and image files to upload
//   TT_ARTIFACTS   folder for screenshots
//   TT_CHROMIUM    the browser (default /usr/bin/chromium)
// It prints one JSON line with what it saw and exits non-zero on the first failed check.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const urls = { image: process.env.TT_IMAGE_URL, audio: process.env.TT_AUDIO_URL, cnn: process.env.TT_CNN_URL, speech: process.env.TT_SPEECH_URL,
  video: process.env.TT_VIDEO_URL };
const artifacts = process.env.TT_ARTIFACTS;
const origins = new Set(Object.values(urls).map((u) => new URL(u).origin));

function check(cond, msg) {
  if (!cond) throw new Error('check failed: ' + msg);
}

const t0 = Date.now();
const marks = {};
const mark = (name) => { marks[name] = Date.now() - t0; };

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tt-web-profile-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.TT_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 1000 },
    deviceScaleFactor: 1,
  });
  mark('launched');
  const seen = { external: [], errors: [], csp: [] };
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('data:') && !u.startsWith('blob:') && !origins.has(new URL(u).origin)) seen.external.push(u);
    });
    page.on('pageerror', (e) => seen.errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const t = m.text();
      if (/Content Security Policy/i.test(t)) seen.csp.push(t);
      // Failed API calls the test provokes on purpose (401, and 400 for a refused speed) are
      // logged by chromium as errors.
      else if (!/status of 40[01]/.test(t)) seen.errors.push(t);
    });
    const result = {};
    result.image = await image(page);
    mark('image');
    result.cnn = await cnn(page);
    mark('cnn');
    result.audio = await audio(page);
    mark('audio');
    result.speech = await speech(page);
    mark('speech');
    result.video = await video(page);
    mark('video');
    result.docs = await docs(page);
    check(seen.external.length === 0, 'requests to other origins: ' + seen.external.join(', '));
    check(seen.csp.length === 0, 'CSP violations: ' + seen.csp.join(' | '));
    check(seen.errors.length === 0, 'page errors: ' + seen.errors.join(' | '));
    mark('done');
    console.log(JSON.stringify({ ok: true, ...result, marks }));
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

async function openUI(page, want) {
  const base = urls[want];
  const resp = await page.goto(base + '/ui', { waitUntil: 'load' });
  check(resp.ok(), `GET /ui answered ${resp.status()}`);
  check(page.url() === base + '/ui/', 'the /ui redirect landed on ' + page.url());
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'ready', null, { timeout: 15000 });
  for (const svc of ['image', 'audio', 'cnn', 'speech', 'video']) {
    const off = await page.$eval(`#${svc}`, (el) => el.classList.contains('off'));
    check(off === (svc !== want), `section ${svc} is ${off ? 'off' : 'on'} on a ${want} server`);
  }
  check(await page.inputValue('#api-key') === 'your-secret-key', 'the API key field does not default to your-secret-key');
}

async function image(page) {
  await openUI(page, 'image');

  // A wrong key is refused and the page says so; the key is kept in sessionStorage.
  await page.fill('#api-key', 'wrong-key');
  check(await page.evaluate(() => sessionStorage.getItem('tt-media-server.api-key')) === 'wrong-key', 'key not in sessionStorage');
  await page.click('#image-submit');
  await page.waitForFunction(() => window.ttDemo.image && window.ttDemo.image.state === 'error', null, { timeout: 15000 });
  const err = await page.textContent('#image-msg');
  check(/HTTP 401/.test(err), 'wrong key message: ' + err);
  await page.fill('#api-key', 'your-secret-key');

  await page.fill('#image-prompt', 'A lighthouse on a rocky coast at sunset, oil painting');
  await page.fill('#image-steps', '20');
  await page.fill('#image-seed', '42');
  await page.click('#image-submit');
  await page.waitForFunction(() => window.ttDemo.image && window.ttDemo.image.state !== 'running', null, { timeout: 60000 });
  const st = await page.evaluate(() => window.ttDemo.image);
  check(st.state === 'done', 'image generation: ' + JSON.stringify(st));
  // The image is rendered: decoded, laid out, and not a flat fill.
  const img = await page.$eval('#image-result', (el) => {
    const c = document.createElement('canvas');
    c.width = 64; c.height = 64;
    const g = c.getContext('2d');
    g.drawImage(el, 0, 0, 64, 64);
    const d = g.getImageData(0, 0, 64, 64).data;
    let sum = 0, sq = 0;
    for (let i = 0; i < d.length; i += 4) {
      const y = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
      sum += y; sq += y * y;
    }
    const n = d.length / 4, mean = sum / n;
    const r = el.getBoundingClientRect();
    return { w: el.naturalWidth, h: el.naturalHeight, shownW: Math.round(r.width), shownH: Math.round(r.height),
      complete: el.complete, mean, std: Math.sqrt(Math.max(0, sq / n - mean * mean)) };
  });
  check(img.complete && img.w === 1024 && img.h === 1024, 'image size ' + JSON.stringify(img));
  check(img.shownW >= 256 && img.shownH >= 256, 'image not shown large enough ' + JSON.stringify(img));
  check(img.std > 5, 'the image is a flat fill ' + JSON.stringify(img));
  const caption = await page.textContent('#image-caption');
  check(/1024×1024/.test(caption) && /seed 42/.test(caption), 'caption: ' + caption);
  const shot = path.join(artifacts, 'ui-image.png');
  await page.screenshot({ path: shot, fullPage: true });
  return { image: img, caption, screenshot: shot };
}

async function transcribe(page, api, shotName) {
  await page.check(`input[name="audio-api"][value="${api}"]`);
  await page.setInputFiles('#audio-file', process.env.TT_WAV);
  await page.click('#audio-submit');
  // Streamed text is on the page while the transcription is still running.
  await page.waitForFunction(() => {
    const t = window.ttDemo.transcription;
    return t && t.state === 'streaming' && t.chunks >= 2 && document.getElementById('transcript').textContent.trim().length > 0;
  }, null, { timeout: 30000, polling: 20 });
  const partial = await page.textContent('#transcript');
  const midShot = path.join(artifacts, `${shotName}-streaming.png`);
  await page.locator('#audio').screenshot({ path: midShot });
  await page.waitForFunction(() => window.ttDemo.transcription.state !== 'streaming', null, { timeout: 60000 });
  const st = await page.evaluate(() => window.ttDemo.transcription);
  check(st.state === 'done', `${api} transcription: ` + JSON.stringify(st));
  check(st.chunks >= 3, `${api}: only ${st.chunks} streamed pieces`);
  check(st.times[0] < st.doneAt - 200, `${api}: the first piece came at ${st.times[0]} ms, the end at ${st.doneAt} ms: not streamed`);
  const full = (await page.textContent('#transcript')).trim();
  check(full.length > partial.trim().length, `${api}: the text did not grow after the first pieces`);
  check(/simulated/i.test(full), `${api}: unexpected transcript ${full}`);
  const shot = path.join(artifacts, `${shotName}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  return { api, chunks: st.chunks, firstMs: st.times[0], doneMs: st.doneAt, partial: partial.trim(), text: full, screenshot: shot, midScreenshot: midShot };
}

async function audio(page) {
  await openUI(page, 'audio');
  const ndjson = await transcribe(page, 'ndjson', 'ui-audio-ndjson');
  const segments = await page.$$eval('#audio-segments tbody tr', (rows) => rows.length);
  check(segments >= 2, `NDJSON: ${segments} segment rows, want the VAD segments`);
  const sse = await transcribe(page, 'sse', 'ui-audio-sse');
  return { ndjson: { ...ndjson, segments }, sse };
}

async function cnn(page) {
  await openUI(page, 'cnn');
  await page.setInputFiles('#cnn-file', process.env.TT_PNG);
  await page.fill('#cnn-topk', '5');
  await page.click('#cnn-submit');
  await page.waitForFunction(() => window.ttDemo.classification && window.ttDemo.classification.state !== 'running', null, { timeout: 30000 });
  const st = await page.evaluate(() => window.ttDemo.classification);
  check(st.state === 'done', 'classification: ' + JSON.stringify(st));
  const bars = await page.$$eval('#cnn-bars li', (els) => els.length);
  check(bars >= 1 && bars <= 5, `${bars} ranked classes shown for top_k 5`);
  const top1 = await page.textContent('#cnn-top1');
  check(top1 === st.top1 && top1.length > 0, 'top-1 label shown: ' + top1);
  const shot = path.join(artifacts, 'ui-cnn.png');
  await page.screenshot({ path: shot, fullPage: true });
  return { top1, bars, screenshot: shot };
}

// speakOnce presses Speak and waits for the panel's answer.
async function speakOnce(page) {
  await page.evaluate(() => { window.ttDemo.speech = null; });
  await page.click('#speech-submit');
  await page.waitForFunction(() => window.ttDemo.speech !== null, null, { timeout: 5000 });
  await page.waitForFunction(() => window.ttDemo.speech && window.ttDemo.speech.state !== 'running', null, { timeout: 60000, polling: 20 });
  return page.evaluate(() => window.ttDemo.speech);
}

async function speech(page) {
  await openUI(page, 'speech');
  // The voice picker is filled from GET /v1/audio/voices, the default speaker selected.
  await page.waitForFunction(() => window.ttDemo.voices !== null, null, { timeout: 15000 });
  const voices = await page.evaluate(() => window.ttDemo.voices);
  check(!voices.error && voices.count >= 2, 'voices: ' + JSON.stringify(voices));
  const options = await page.$$eval('#speech-voice option', (els) => els.map((e) => e.value));
  check(options.length === voices.count, `${options.length} voices in the picker, the server lists ${voices.count}`);
  check(await page.inputValue('#speech-voice') === voices.default, 'the default voice is not selected');
  const voice = options.find((v) => v !== voices.default);
  await page.selectOption('#speech-voice', voice);
  await page.fill('#speech-text', 'Hello from Tenstorrent. This sentence is spoken by SpeechT5, and the first words play ' +
    'while the rest is still being made. A third sentence makes the text long enough for several chunks.');

  // Streamed: PCM chunks are scheduled on Web Audio as they come, before the answer ends.
  await page.check('#speech-stream');
  check(await page.isDisabled('#speech-format'), 'the format picker is enabled while streaming raw PCM');
  const streamed = await speakOnce(page);
  check(streamed.state === 'done', 'streamed speech: ' + JSON.stringify(streamed));
  check(streamed.chunks >= 2, `streamed speech came in ${streamed.chunks} piece(s)`);
  check(streamed.firstAudioMs < streamed.doneAt - 150, `first audio at ${streamed.firstAudioMs} ms, done at ${streamed.doneAt} ms: not streamed`);
  // The streamed samples, saved as WAV, play in the browser with the streamed length.
  check(streamed.duration > 3 && Math.abs(streamed.duration - streamed.seconds) < 0.01 &&
    Math.abs(streamed.seconds - streamed.bytes / 2 / 24000) < 0.001, 'streamed duration ' + JSON.stringify(streamed));
  const midShot = path.join(artifacts, 'ui-speech-stream.png');
  await page.locator('#speech').screenshot({ path: midShot });

  // Whole files: the browser decodes each format it can play to the same length.
  await page.uncheck('#speech-stream');
  const files = {};
  for (const format of ['mp3', 'wav', 'flac', 'opus', 'pcm']) {
    await page.selectOption('#speech-format', format);
    const st = await speakOnce(page);
    check(st.state === 'done', `${format}: ` + JSON.stringify(st));
    // A streamed FLAC has no length in STREAMINFO: chromium's, found by seeking to the end, is
    // the start of the last frame, up to one 4096-sample block (0.256 s at 16 kHz) short.
    const slack = format === 'flac' ? 0.26 : 0.15;
    check(Math.abs(st.duration - streamed.duration) < slack, `${format} lasts ${st.duration} s, the stream ${streamed.duration} s`);
    files[format] = { duration: st.duration, bytes: st.bytes, contentType: st.contentType };
  }
  const shot = path.join(artifacts, 'ui-speech.png');
  await page.screenshot({ path: shot, fullPage: true });

  // A refused field is shown with the server's message naming it (the browser's own range
  // check is switched off so that the request reaches the server).
  await page.$eval('#speech-form', (f) => { f.noValidate = true; });
  await page.fill('#speech-speed', '9');
  const bad = await speakOnce(page);
  check(bad.state === 'error' && /HTTP 400/.test(bad.error) && /speed/.test(bad.error), 'speed 9: ' + JSON.stringify(bad));
  const msg = await page.textContent('#speech-msg');
  check(/speed/.test(msg), 'the refusal is not shown: ' + msg);
  await page.fill('#speech-speed', '1');
  return { voices: voices.count, voice, streamed, files, refused: bad.error, screenshot: shot, midScreenshot: midShot };
}

// video submits a job, watches the progress bar move, and plays the MP4 it gets.
async function video(page) {
  await openUI(page, 'video');
  await page.fill('#video-prompt', 'Waves breaking on a rocky shore at sunset');
  await page.fill('#video-steps', '20');
  await page.fill('#video-seed', '7');
  await page.evaluate(() => { window.ttDemo.video = null; });
  await page.click('#video-submit');
  // Mid-job: the bar shows a step count between 0 and 100.
  await page.waitForFunction(() => { const b = document.getElementById('video-progress'); return b.value > 0 && b.value < 100; },
    null, { timeout: 30000, polling: 20 });
  const midShot = path.join(artifacts, 'ui-video-progress.png');
  await page.locator('#video').screenshot({ path: midShot });
  await page.waitForFunction(() => window.ttDemo.video && window.ttDemo.video.state !== 'running', null, { timeout: 90000, polling: 50 });
  const st = await page.evaluate(() => window.ttDemo.video);
  check(st.state === 'done', 'video: ' + JSON.stringify(st));
  check(st.seed === 7, 'the seed sent is the job\'s: ' + st.seed);
  const ups = st.progress.filter((p) => p > 0 && p < 100);
  check(ups.length >= 2, 'the progress bar did not move through the steps: ' + JSON.stringify(st.progress));
  check(st.progress[st.progress.length - 1] === 100, 'the job ended below 100%: ' + JSON.stringify(st.progress));
  check(Math.abs(st.duration - st.frames / st.fps) < 0.1, `the player says ${st.duration} s for ${st.frames} frames at ${st.fps} fps`);
  const href = await page.getAttribute('#video-download', 'href');
  check(href && href.startsWith('blob:'), 'no download link: ' + href);
  const shot = path.join(artifacts, 'ui-video.png');
  await page.locator('#video').screenshot({ path: shot });
  return { ...st, screenshot: shot, midScreenshot: midShot };
}

async function docs(page) {
  const resp = await page.goto(urls.cnn + '/docs', { waitUntil: 'load' });
  check(resp.ok(), `GET /docs answered ${resp.status()}`);
  await page.waitForSelector('h1:has-text("tt-media-server (Go)")', { timeout: 30000 });
  for (const op of ['Generate images (Python ImageGenerateRequest)', 'Create images (OpenAI images API, or the Python ImageGenerateRequest)', 'Transcribe audio (OpenAI audio API)']) {
    await page.locator('h2', { hasText: op }).first().waitFor({ timeout: 10000 });
  }
  mark('rendered');
  const ops = await page.$$eval('[data-section-id^="tag/"], [data-section-id^="operation/"]', (els) => els.length);
  const shot = path.join(artifacts, 'docs.png');
  await page.screenshot({ path: shot });
  return { sections: ops, screenshot: shot };
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

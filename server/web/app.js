// tt-media-server web demo: plain JS, no build step, no third-party code. It calls the
// server's own API with the key typed into the page (kept in sessionStorage, this tab only).
'use strict';

const KEY_STORAGE = 'tt-media-server.api-key';
const DEFAULT_KEY = 'your-secret-key';
const $ = (id) => document.getElementById(id);

// The families this server mounts, filled in by the server from its router.
const services = (document.querySelector('meta[name="tt-services"]').content || '')
  .split(',').map((s) => s.trim()).filter((s) => s && !s.startsWith('{{'));

// Progress of the last transcription, for people and for the browser test.
window.ttDemo = { services, transcription: null, image: null, classification: null, speech: null, voices: null, video: null };

// ---- API key ----------------------------------------------------------------------------
const keyInput = $('api-key');
keyInput.value = sessionStorage.getItem(KEY_STORAGE) || DEFAULT_KEY;
keyInput.addEventListener('input', () => sessionStorage.setItem(KEY_STORAGE, keyInput.value));
$('api-key-show').addEventListener('click', () => {
  const hidden = keyInput.type === 'password';
  keyInput.type = hidden ? 'text' : 'password';
  $('api-key-show').textContent = hidden ? 'hide' : 'show';
});
const authHeaders = () => ({ Authorization: 'Bearer ' + keyInput.value.trim() });

// ---- helpers ----------------------------------------------------------------------------
function setMsg(el, text, kind) {
  el.textContent = text;
  el.classList.toggle('error', kind === 'error');
  el.classList.toggle('busy', kind === 'busy');
}

// errorText reads either envelope: FastAPI {"detail"} or OpenAI {"error": {"message"}}.
async function errorText(resp) {
  const body = await resp.text();
  let msg = body.slice(0, 300);
  try {
    const j = JSON.parse(body);
    if (j.error && j.error.message) msg = j.error.message;
    else if (typeof j.detail === 'string') msg = j.detail;
    else if (Array.isArray(j.detail) && j.detail.length) {
      msg = j.detail.map((d) => `${(d.loc || []).slice(1).join('.')}: ${d.msg}`).join('; ');
    }
  } catch (_) { /* not JSON: keep the text */ }
  const retry = resp.headers.get('Retry-After');
  return `HTTP ${resp.status}: ${msg}${retry ? ` (retry after ${retry} s)` : ''}`;
}

const seconds = (ms) => (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';

// ---- which sections are live --------------------------------------------------------------
for (const card of document.querySelectorAll('[data-service]')) {
  const on = services.includes(card.dataset.service);
  card.classList.toggle('off', !on);
  for (const el of card.querySelectorAll('input, textarea, button, select')) el.disabled = !on;
}

async function refreshStatus() {
  const box = $('status');
  try {
    const resp = await fetch('../tt-liveness', { cache: 'no-store' });
    const j = await resp.json();
    const runner = j.runner_in_use || '?';
    const mock = j.mock_devices ? ' · mock devices' : '';
    if (resp.ok && j.model_ready) {
      box.dataset.state = 'ready';
      $('status-text').textContent = `${runner} ready · queue ${j.queue_size}/${j.max_queue_size}${mock}`;
    } else {
      box.dataset.state = 'warming';
      $('status-text').textContent = `${runner} warming up${mock}`;
    }
  } catch (e) {
    box.dataset.state = 'down';
    $('status-text').textContent = 'server unreachable';
  }
}
refreshStatus();
setInterval(refreshStatus, 5000);

// ---- image generation -------------------------------------------------------------------
$('image-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('image-msg');
  const body = {
    prompt: $('image-prompt').value,
    num_inference_steps: Number($('image-steps').value),
    guidance_scale: Number($('image-guidance').value),
    number_of_images: 1,
  };
  if ($('image-negative').value.trim()) body.negative_prompt = $('image-negative').value;
  if ($('image-seed').value !== '') body.seed = Number($('image-seed').value);
  $('image-submit').disabled = true;
  setMsg(msg, `generating, ${body.num_inference_steps} steps…`, 'busy');
  window.ttDemo.image = { state: 'running' };
  const t0 = performance.now();
  try {
    const resp = await fetch('../image/generations', {
      method: 'POST',
      headers: { ...authHeaders(), 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!resp.ok) throw new Error(await errorText(resp));
    const j = await resp.json();
    const b64 = j.images[0];
    const png = b64.startsWith('iVBOR');
    const url = `data:image/${png ? 'png' : 'jpeg'};base64,${b64}`;
    const img = $('image-result');
    img.src = url;
    await img.decode();
    const ms = performance.now() - t0;
    $('image-figure').hidden = false;
    $('image-caption').textContent =
      `${img.naturalWidth}×${img.naturalHeight} ${png ? 'PNG' : 'JPEG'} · ${body.num_inference_steps} steps` +
      `${body.seed !== undefined ? ' · seed ' + body.seed : ''} · ${seconds(ms)}`;
    $('image-download').href = url;
    $('image-download').download = `tt-image.${png ? 'png' : 'jpg'}`;
    setMsg(msg, `done in ${seconds(ms)}`);
    window.ttDemo.image = { state: 'done', width: img.naturalWidth, height: img.naturalHeight, ms };
  } catch (e) {
    setMsg(msg, e.message, 'error');
    window.ttDemo.image = { state: 'error', error: e.message };
  } finally {
    $('image-submit').disabled = false;
  }
});

// ---- transcription ----------------------------------------------------------------------
let recorded = null; // a WAV Blob made from the last recording

function encodeWAV(samples, rate) {
  const buf = new ArrayBuffer(44 + samples.length * 2);
  const v = new DataView(buf);
  const str = (o, s) => { for (let i = 0; i < s.length; i++) v.setUint8(o + i, s.charCodeAt(i)); };
  str(0, 'RIFF'); v.setUint32(4, 36 + samples.length * 2, true); str(8, 'WAVE');
  str(12, 'fmt '); v.setUint32(16, 16, true); v.setUint16(20, 1, true); v.setUint16(22, 1, true);
  v.setUint32(24, rate, true); v.setUint32(28, rate * 2, true); v.setUint16(32, 2, true); v.setUint16(34, 16, true);
  str(36, 'data'); v.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]));
    v.setInt16(44 + i * 2, s < 0 ? s * 0x8000 : s * 0x7fff, true);
  }
  return new Blob([buf], { type: 'audio/wav' });
}

// The recorder's webm/opus is not a format the server decodes: decode it here and send WAV.
async function toWAV(blob) {
  const ctx = new AudioContext();
  try {
    const audio = await ctx.decodeAudioData(await blob.arrayBuffer());
    const mono = new Float32Array(audio.length);
    for (let c = 0; c < audio.numberOfChannels; c++) {
      const ch = audio.getChannelData(c);
      for (let i = 0; i < ch.length; i++) mono[i] += ch[i] / audio.numberOfChannels;
    }
    return encodeWAV(mono, audio.sampleRate);
  } finally {
    ctx.close();
  }
}

let recorder = null;
$('audio-record').addEventListener('click', async () => {
  const btn = $('audio-record');
  const msg = $('audio-rec-msg');
  if (recorder) { recorder.stop(); return; }
  if (!navigator.mediaDevices || !window.MediaRecorder) {
    setMsg(msg, 'recording needs a secure context (localhost or HTTPS) and a microphone', 'error');
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (e) {
    setMsg(msg, 'microphone: ' + e.message, 'error');
    return;
  }
  const parts = [];
  recorder = new MediaRecorder(stream);
  recorder.ondataavailable = (e) => parts.push(e.data);
  recorder.onstop = async () => {
    stream.getTracks().forEach((t) => t.stop());
    recorder = null;
    btn.textContent = '● Record';
    btn.classList.remove('recording');
    try {
      recorded = await toWAV(new Blob(parts, { type: parts[0] ? parts[0].type : 'audio/webm' }));
      $('audio-file').value = '';
      const prev = $('audio-preview');
      prev.src = URL.createObjectURL(recorded);
      prev.hidden = false;
      setMsg(msg, `recorded ${(recorded.size / 1024).toFixed(0)} kB (WAV); press Transcribe`);
    } catch (e) {
      setMsg(msg, 'could not decode the recording: ' + e.message, 'error');
    }
  };
  recorder.start();
  btn.textContent = '■ Stop';
  btn.classList.add('recording');
  setMsg(msg, 'recording…');
});
$('audio-file').addEventListener('change', () => { recorded = null; $('audio-preview').hidden = true; });

for (const r of document.querySelectorAll('input[name="audio-api"]')) {
  r.addEventListener('change', () => {
    $('audio-route').textContent = r.value === 'sse' ? 'POST /v1/audio/transcriptions' : 'POST /audio/transcriptions';
  });
}

const SPEAKER = /^\[(SPEAKER_\d+)\]\s*/;

// Transcript renders streamed pieces as they come: a new paragraph per speaker turn.
class Transcript {
  constructor(el) {
    this.el = el;
    this.el.textContent = '';
    this.el.classList.remove('done');
    this.para = null;
    this.stats = { state: 'streaming', chunks: 0, times: [], text: '', final: null, error: null };
    window.ttDemo.transcription = this.stats;
    this.t0 = performance.now();
  }
  add(piece) {
    let text = piece;
    const m = SPEAKER.exec(text);
    if (m || !this.para) {
      this.para = document.createElement('p');
      this.para.className = 'para';
      if (m) {
        const tag = document.createElement('span');
        tag.className = 'speaker';
        tag.textContent = m[1];
        this.para.appendChild(tag);
        text = text.slice(m[0].length);
      }
      this.el.appendChild(this.para);
    }
    text = text.trim();
    if (!text) return;
    const span = document.createElement('span');
    span.className = 'chunk';
    span.textContent = (this.para.querySelector('.chunk') ? ' ' : '') + text;
    this.para.appendChild(span);
    this.el.scrollTop = this.el.scrollHeight;
    this.stats.chunks++;
    this.stats.times.push(Math.round(performance.now() - this.t0));
    this.stats.text += (this.stats.text ? ' ' : '') + text;
  }
  finish(final) {
    this.stats.final = final;
    this.stats.state = 'done';
    this.stats.doneAt = Math.round(performance.now() - this.t0);
    this.el.classList.add('done');
  }
  fail(message) {
    this.stats.state = 'error';
    this.stats.error = message;
  }
}

// readLines calls onLine for each complete line of a streamed body.
async function readLines(resp, sep, onLine) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf(sep)) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + sep.length);
      if (line.trim()) onLine(line);
    }
  }
  buf += dec.decode();
  if (buf.trim()) onLine(buf);
}

function showSegments(segments) {
  const table = $('audio-segments');
  const tbody = table.querySelector('tbody');
  tbody.textContent = '';
  for (const s of segments || []) {
    const tr = document.createElement('tr');
    for (const v of [s.id, s.speaker, s.start_time.toFixed(2), s.end_time.toFixed(2), s.text]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  table.hidden = !(segments && segments.length);
}

$('audio-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('audio-msg');
  const file = recorded || $('audio-file').files[0];
  if (!file) { setMsg(msg, 'choose a file or record first', 'error'); return; }
  const sse = document.querySelector('input[name="audio-api"]:checked').value === 'sse';
  const form = new FormData();
  form.append('file', file, file.name || 'recording.wav');
  form.append('stream', 'true');
  form.append('is_preprocessing_enabled', $('audio-preprocess').checked ? 'true' : 'false');
  if (sse) { form.append('model', 'whisper-1'); form.append('response_format', 'json'); }
  $('audio-submit').disabled = true;
  $('audio-out').hidden = false;
  showSegments(null);
  const tr = new Transcript($('transcript'));
  setMsg(msg, 'uploading…', 'busy');
  const t0 = performance.now();
  try {
    const resp = await fetch(sse ? '../v1/audio/transcriptions' : '../audio/transcriptions', {
      method: 'POST', headers: authHeaders(), body: form,
    });
    if (!resp.ok) throw new Error(await errorText(resp));
    setMsg(msg, 'transcribing…', 'busy');
    if (sse) {
      await readLines(resp, '\n\n', (event) => {
        const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
        if (!data) return;
        const j = JSON.parse(data);
        if (j.type === 'transcript.text.delta') tr.add(j.delta);
        else if (j.type === 'transcript.text.done') tr.finish(j);
        else if (j.type === 'error') throw new Error(j.error.message);
      });
    } else {
      await readLines(resp, '\n', (line) => {
        const j = JSON.parse(line);
        if (j.status_code !== undefined && j.detail !== undefined) throw new Error(`HTTP ${j.status_code}: ${j.detail}`);
        if (j.chunk_id !== undefined) tr.add(j.text);
        else { tr.finish(j); showSegments(j.segments); }
      });
    }
    if (tr.stats.state !== 'done') throw new Error('the stream ended without a final result');
    const f = tr.stats.final;
    const dur = f.duration !== undefined ? f.duration : (f.usage ? f.usage.seconds : 0);
    setMsg(msg, `done: ${Number(dur).toFixed(1)} s of audio in ${seconds(performance.now() - t0)}, ${tr.stats.chunks} streamed pieces`);
  } catch (e) {
    tr.fail(e.message);
    setMsg(msg, e.message, 'error');
  } finally {
    $('audio-submit').disabled = false;
  }
});

// ---- classification ---------------------------------------------------------------------
$('cnn-file').addEventListener('change', () => {
  const f = $('cnn-file').files[0];
  if (f) { $('cnn-preview').src = URL.createObjectURL(f); }
});

$('cnn-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('cnn-msg');
  const f = $('cnn-file').files[0];
  if (!f) { setMsg(msg, 'choose an image first', 'error'); return; }
  const form = new FormData();
  form.append('file', f, f.name);
  form.append('top_k', $('cnn-topk').value || '5');
  form.append('min_confidence', $('cnn-minconf').value || '0');
  form.append('response_format', 'json');
  $('cnn-submit').disabled = true;
  setMsg(msg, 'classifying…', 'busy');
  window.ttDemo.classification = { state: 'running' };
  const t0 = performance.now();
  try {
    const resp = await fetch('../cnn/search-image', { method: 'POST', headers: authHeaders(), body: form });
    if (!resp.ok) throw new Error(await errorText(resp));
    const j = await resp.json();
    const item = j.image_data[0];
    $('cnn-top1').textContent = item.top1_class_label;
    $('cnn-top1-prob').textContent = item.top1_class_probability;
    const bars = $('cnn-bars');
    bars.textContent = '';
    item.output.labels.forEach((label, i) => {
      const p = item.output.probabilities[i];
      const li = document.createElement('li');
      const bar = document.createElement('div');
      bar.className = 'bar';
      const fill = document.createElement('span');
      fill.className = 'fill';
      fill.style.width = Math.min(100, parseFloat(p)) + '%';
      const lab = document.createElement('span');
      lab.className = 'label';
      lab.textContent = label;
      bar.append(fill, lab);
      const pct = document.createElement('span');
      pct.className = 'pct';
      pct.textContent = p;
      li.append(bar, pct);
      bars.appendChild(li);
    });
    $('cnn-out').hidden = false;
    setMsg(msg, `done in ${seconds(performance.now() - t0)}`);
    window.ttDemo.classification = { state: 'done', top1: item.top1_class_label, labels: item.output.labels };
  } catch (e) {
    setMsg(msg, e.message, 'error');
    window.ttDemo.classification = { state: 'error', error: e.message };
  } finally {
    $('cnn-submit').disabled = false;
  }
});

// ---- text to speech -----------------------------------------------------------------------
const PCM_RATE = 24000; // OpenAI's pcm: 16-bit little-endian mono at 24 kHz

// loadVoices fills the voice picker from GET /v1/audio/voices (with the key) and keeps only
// the formats this server can encode.
async function loadVoices() {
  if (!services.includes('text_to_speech')) return;
  const sel = $('speech-voice');
  try {
    const resp = await fetch('../v1/audio/voices', { headers: authHeaders(), cache: 'no-store' });
    if (!resp.ok) throw new Error(await errorText(resp));
    const j = await resp.json();
    const keep = sel.value;
    sel.textContent = '';
    for (const v of j.data) {
      const opt = document.createElement('option');
      opt.value = v.id;
      opt.textContent = v.id + (v.aliases && v.aliases.length ? ` (${v.aliases.join(', ')})` : '') + (v.default ? ' · default' : '');
      sel.appendChild(opt);
    }
    sel.value = j.data.some((v) => v.id === keep) ? keep : j.default;
    for (const opt of $('speech-format').options) {
      opt.disabled = Array.isArray(j.formats) && !j.formats.includes(opt.value);
    }
    window.ttDemo.voices = { count: j.data.length, default: j.default, formats: j.formats };
  } catch (e) {
    setMsg($('speech-msg'), 'voices: ' + e.message, 'error');
    window.ttDemo.voices = { error: e.message };
  }
}
loadVoices();
keyInput.addEventListener('change', loadVoices);

const syncSpeechFormat = () => { $('speech-format').disabled = $('speech-stream').checked || !services.includes('text_to_speech'); };
$('speech-stream').addEventListener('change', syncSpeechFormat);
syncSpeechFormat();

// PCMPlayer schedules streamed 16-bit PCM on a Web Audio clock, gap-free, as it arrives.
class PCMPlayer {
  constructor() {
    this.ctx = new AudioContext({ sampleRate: PCM_RATE });
    this.next = 0;
    this.odd = null; // a byte left over from the last read (a sample split across reads)
    this.parts = [];
    this.samples = 0;
  }
  push(bytes) {
    if (this.odd !== null) {
      const joined = new Uint8Array(bytes.length + 1);
      joined[0] = this.odd;
      joined.set(bytes, 1);
      bytes = joined;
      this.odd = null;
    }
    if (bytes.length % 2) { this.odd = bytes[bytes.length - 1]; bytes = bytes.subarray(0, bytes.length - 1); }
    if (!bytes.length) return 0;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const f = new Float32Array(bytes.length / 2);
    for (let i = 0; i < f.length; i++) f[i] = view.getInt16(2 * i, true) / 32768;
    this.parts.push(f);
    this.samples += f.length;
    const buf = this.ctx.createBuffer(1, f.length, PCM_RATE);
    buf.copyToChannel(f, 0);
    const src = this.ctx.createBufferSource();
    src.buffer = buf;
    src.connect(this.ctx.destination);
    this.next = Math.max(this.next, this.ctx.currentTime + 0.05);
    src.start(this.next);
    this.next += buf.duration;
    return f.length;
  }
  wav() {
    const all = new Float32Array(this.samples);
    let o = 0;
    for (const p of this.parts) { all.set(p, o); o += p.length; }
    return encodeWAV(all, PCM_RATE);
  }
  close() { this.ctx.close(); }
}

let speechPlayer = null;
$('speech-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('speech-msg');
  const stream = $('speech-stream').checked;
  const format = stream ? 'pcm' : $('speech-format').value;
  const body = { model: 'tts-1', input: $('speech-text').value, voice: $('speech-voice').value || 'alloy', response_format: format };
  const speed = Number($('speech-speed').value);
  if ($('speech-speed').value !== '' && speed !== 1) body.speed = speed;
  if (speechPlayer) { speechPlayer.close(); speechPlayer = null; }
  const audio = $('speech-audio');
  audio.pause();
  $('speech-submit').disabled = true;
  setMsg(msg, 'speaking…', 'busy');
  const st = { state: 'running', format, stream, chunks: 0, bytes: 0, firstAudioMs: null, doneAt: null, seconds: 0 };
  window.ttDemo.speech = st;
  const t0 = performance.now();
  try {
    if (stream) speechPlayer = new PCMPlayer(); // made in the click's task, so it may play
    const resp = await fetch('../v1/audio/speech', {
      method: 'POST',
      headers: { ...authHeaders(), 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!resp.ok) throw new Error(await errorText(resp));
    let blob;
    if (stream) {
      const reader = resp.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        st.bytes += value.length;
        if (speechPlayer.push(value) > 0) {
          st.chunks++;
          if (st.firstAudioMs === null) {
            st.firstAudioMs = Math.round(performance.now() - t0);
            setMsg(msg, `playing: first audio after ${seconds(st.firstAudioMs)}…`, 'busy');
          }
        }
      }
      st.seconds = speechPlayer.samples / PCM_RATE;
      blob = speechPlayer.wav();
    } else {
      blob = await resp.blob();
      st.bytes = blob.size;
      if (format === 'pcm') { // raw samples: wrapped in a WAV header so that the player takes them
        const view = new DataView(await blob.arrayBuffer());
        const f = new Float32Array(Math.floor(view.byteLength / 2));
        for (let i = 0; i < f.length; i++) f[i] = view.getInt16(2 * i, true) / 32768;
        blob = encodeWAV(f, PCM_RATE);
      }
      st.chunks = 1;
      st.firstAudioMs = Math.round(performance.now() - t0);
    }
    st.doneAt = Math.round(performance.now() - t0);
    st.contentType = resp.headers.get('Content-Type');
    const url = URL.createObjectURL(blob);
    audio.src = url;
    const ext = format === 'pcm' ? 'wav' : (format === 'opus' ? 'ogg' : format);
    $('speech-download').href = url;
    $('speech-download').download = `speech.${ext}`;
    $('speech-out').hidden = false;
    // The browser decodes the file: its duration says the audio is whole and playable.
    await new Promise((resolve, reject) => {
      audio.onloadedmetadata = resolve;
      audio.onerror = () => reject(new Error(`the browser cannot play this ${format} (${audio.error ? audio.error.message : 'decode error'})`));
    });
    if (audio.duration === Infinity) {
      // A streamed FLAC or WAV does not say its length up front: seeking to the end makes the
      // browser find it (and the player's position bar work).
      await new Promise((resolve) => {
        audio.ondurationchange = () => { if (Number.isFinite(audio.duration)) resolve(); };
        audio.currentTime = 1e101;
      });
      audio.ondurationchange = null;
      audio.currentTime = 0;
    }
    st.duration = audio.duration;
    if (!stream) audio.play().catch(() => { /* autoplay may be refused: the controls remain */ });
    $('speech-caption').textContent = `${st.duration.toFixed(2)} s of ${stream ? 'streamed pcm (saved as WAV)' : format} · ` +
      `first audio ${seconds(st.firstAudioMs)} · done ${seconds(st.doneAt)}`;
    setMsg(msg, `done: ${st.duration.toFixed(2)} s of audio in ${seconds(st.doneAt)}`);
    st.state = 'done';
  } catch (e) {
    setMsg(msg, e.message, 'error');
    st.state = 'error';
    st.error = e.message;
  } finally {
    $('speech-submit').disabled = false;
  }
});

// ---- video --------------------------------------------------------------------------------
// Submits a HEAD-dialect job, polls it (the progress bar follows the denoising steps), then
// fetches the MP4 and plays it, with a download link.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
$('video-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('video-msg');
  const bar = $('video-progress');
  const body = { prompt: $('video-prompt').value, num_inference_steps: Number($('video-steps').value) };
  if ($('video-seed').value !== '') body.seed = Number($('video-seed').value);
  const st = { state: 'running', progress: [], statuses: [] };
  window.ttDemo.video = st;
  $('video-submit').disabled = true;
  bar.hidden = false;
  bar.value = 0;
  const t0 = performance.now();
  try {
    let resp = await fetch('../v1/videos/generations', {
      method: 'POST',
      headers: { ...authHeaders(), 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (resp.status !== 202) throw new Error(await errorText(resp));
    let job = await resp.json();
    st.id = job.id;
    st.seed = job.request_parameters.seed;
    for (;;) {
      st.statuses.push(job.status);
      if (!st.progress.length || st.progress[st.progress.length - 1] !== job.progress) st.progress.push(job.progress);
      bar.value = job.progress;
      setMsg(msg, `${job.status.replace('_', ' ')} · ${job.progress}%`, 'busy');
      if (job.status === 'completed') break;
      if (job.status === 'failed' || job.status === 'cancelled') {
        throw new Error(`job ${job.status}${job.error ? ': ' + job.error.message : ''}`);
      }
      await sleep(200);
      resp = await fetch(`../v1/videos/generations/${encodeURIComponent(job.id)}`, { headers: authHeaders() });
      if (!resp.ok) throw new Error(await errorText(resp));
      job = await resp.json();
    }
    resp = await fetch(`../v1/videos/generations/${encodeURIComponent(job.id)}/download`, { headers: authHeaders() });
    if (!resp.ok) throw new Error(await errorText(resp));
    const blob = await resp.blob();
    const url = URL.createObjectURL(blob);
    const player = $('video-player');
    const loaded = new Promise((resolve, reject) => {
      player.onloadedmetadata = resolve;
      player.onerror = () => reject(new Error('the browser could not play the MP4'));
    });
    player.src = url;
    $('video-out').hidden = false;
    await loaded;
    const ms = performance.now() - t0;
    const p = job.request_parameters;
    $('video-caption').textContent = `${player.videoWidth}×${player.videoHeight} · ${p.num_frames} frames at ${p.fps} fps · ` +
      `${player.duration.toFixed(2)} s · seed ${p.seed} · ${(blob.size / 1024).toFixed(0)} KiB · ${seconds(ms)}`;
    $('video-download').href = url;
    $('video-download').download = `${job.id}.mp4`;
    setMsg(msg, `done in ${seconds(ms)}`);
    Object.assign(st, { state: 'done', width: player.videoWidth, height: player.videoHeight, duration: player.duration,
      frames: p.num_frames, fps: p.fps, bytes: blob.size, contentType: blob.type, ms });
  } catch (e) {
    setMsg(msg, e.message, 'error');
    Object.assign(st, { state: 'error', error: e.message });
  } finally {
    $('video-submit').disabled = false;
  }
});

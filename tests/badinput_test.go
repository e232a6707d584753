package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// badCase is one hostile or broken request and the answer it must get.
type badCase struct {
	name    string
	method  string
	path    string
	ctype   string
	body    []byte
	noAuth  bool
	status  int
	msgPart string // a piece of the answer that names the problem
}

// pngBomb is a valid PNG header claiming width×height pixels with almost no data.
func pngBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.Write([]byte("\x89PNG\r\n\x1a\n"))
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	writeChunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crcOf(typ, data))
	}
	writeChunk("IHDR", ihdr)
	writeChunk("IEND", nil)
	return b.Bytes()
}

func crcOf(typ string, data []byte) uint32 {
	// crc32 IEEE over type+data, as PNG requires.
	var table [256]uint32
	for i := range table {
		c := uint32(i)
		for k := 0; k < 8; k++ {
			if c&1 == 1 {
				c = 0xEDB88320 ^ (c >> 1)
			} else {
				c >>= 1
			}
		}
		table[i] = c
	}
	crc := ^uint32(0)
	for _, x := range append([]byte(typ), data...) {
		crc = table[byte(crc)^x] ^ (crc >> 8)
	}
	return ^crc
}

func smallPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func jsonBody(v string) []byte { return []byte(v) }

// runCorpus sends every case, in parallel bursts, and checks each answer; then checks the
// server still serves a valid request.
func runCorpus(t *testing.T, s *server, cases []badCase, valid func() reply) {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]reply, len(cases))
	errs := make([]error, len(cases))
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			headers := []string{}
			if c.ctype != "" {
				headers = append(headers, "Content-Type", c.ctype)
			}
			if !c.noAuth {
				headers = append(headers, "Authorization", bearer)
			}
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			results[i], errs[i] = tryDo(method, s.URL+c.path, c.body, headers...)
		}()
	}
	// A valid request in the middle of the storm is served.
	require.Equal(t, http.StatusOK, valid().Status)
	wg.Wait()
	for i, c := range cases {
		require.NoError(t, errs[i], c.name)
		r := results[i]
		require.Equalf(t, c.status, r.Status, "%s: %s", c.name, r)
		require.Lessf(t, r.Status, 500, "%s: a client mistake must never be a 5xx", c.name)
		if c.msgPart != "" {
			require.Containsf(t, string(r.Body), c.msgPart, "%s: the message must name the problem", c.name)
		}
	}
	require.Equal(t, http.StatusOK, valid().Status, "the server keeps serving after the corpus")
}

func TestBadInputCorpus(t *testing.T) {
	t.Parallel()
	t.Run("image", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace"})
		p := "/image/generations"
		ok := `{"prompt":"a","guidance_scale":5}`
		cases := []badCase{
			{"empty body", "", p, "application/json", nil, false, 422, "json_invalid"},
			{"truncated json", "", p, "application/json", jsonBody(`{"prompt":"a",`), false, 422, "JSON decode error"},
			{"json array", "", p, "application/json", jsonBody(`[1,2]`), false, 422, "valid dictionary"},
			{"json string", "", p, "application/json", jsonBody(`"x"`), false, 422, "valid dictionary"},
			{"trailing garbage", "", p, "application/json", jsonBody(ok + `x`), false, 422, "json_invalid"},
			{"missing prompt", "", p, "application/json", jsonBody(`{"guidance_scale":5}`), false, 422, `"prompt"`},
			{"prompt null", "", p, "application/json", jsonBody(`{"prompt":null,"guidance_scale":5}`), false, 422, "string_type"},
			{"prompt number", "", p, "application/json", jsonBody(`{"prompt":5,"guidance_scale":5}`), false, 422, "string_type"},
			{"prompt object", "", p, "application/json", jsonBody(`{"prompt":{},"guidance_scale":5}`), false, 422, "string_type"},
			{"over-long prompt", "", p, "application/json", jsonBody(`{"prompt":"` + strings.Repeat("a", 5000) + `","guidance_scale":5}`), false, 422, "at most 4096 characters"},
			{"guidance NaN string", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":"NaN"}`), false, 422, "finite number"},
			{"guidance Infinity string", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":"Infinity"}`), false, 422, "finite number"},
			{"guidance huge", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":1e400}`), false, 422, "finite number"},
			{"guidance negative", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":-1}`), false, 422, "greater than or equal to 1.0"},
			{"guidance bool-ish string", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":"five"}`), false, 422, "float_parsing"},
			{"steps huge", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"num_inference_steps":99999999999999999999}`), false, 422, "num_inference_steps"},
			{"steps fractional", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"num_inference_steps":20.5}`), false, 422, "fractional part"},
			{"steps string", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"num_inference_steps":"many"}`), false, 422, "int_parsing"},
			{"steps zero", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"num_inference_steps":0}`), false, 422, "greater than or equal to 4"},
			{"steps under the floor", "", p, "application/json", jsonBody(`{"prompt":"a","num_inference_steps":11}`), false, 422, "must be >= 12 for"},
			{"images zero", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"number_of_images":0}`), false, 422, "number_of_images"},
			{"images 1000", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"number_of_images":1000}`), false, 422, "less than or equal to 4"},
			{"seed string", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"seed":"x"}`), false, 422, "seed"},
			{"rescale 2", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"guidance_rescale":2}`), false, 422, "guidance_rescale"},
			{"crop wrong type", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"crop_coords_top_left":"0,0"}`), false, 422, "tuple"},
			{"crop three", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"crop_coords_top_left":[0,0,0]}`), false, 422, "at most 2 items"},
			{"timesteps object", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"timesteps":{"a":1}}`), false, 422, "valid list"},
			{"timesteps too many", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"timesteps":[` + strings.Repeat("1,", 1500) + `1]}`), false, 422, "at most 1000 items"},
			{"timesteps and sigmas", "", p, "application/json", jsonBody(`{"prompt":"a","guidance_scale":5,"timesteps":[1],"sigmas":[1]}`), false, 400, "Cannot pass both"},
			{"text/plain", "", p, "text/plain", jsonBody("hello"), false, 422, "json_invalid"},
			{"no auth", "", p, "application/json", jsonBody(ok), true, 401, "Not authenticated"},
			{"body too large", "", p, "application/json", jsonBody(`{"prompt":"` + strings.Repeat("a", 2<<20) + `"}`), false, 413, "too large"},
			{"unknown route", "", "/image/nope", "application/json", jsonBody(ok), false, 404, "Not Found"},
			{"wrong method", http.MethodGet, p, "", nil, false, 405, "Method Not Allowed"},
			{"other family's route", "", "/audio/transcriptions", "application/json", jsonBody(`{}`), false, 404, "Not Found"},
			{"reset without id", "", "/tt-reset-device", "", nil, false, 422, "device_id"},
			{"reset unknown id", "", "/tt-reset-device?device_id=99", "", nil, false, 404, "unknown worker"},
		}
		// A bad deadline header is named in the answer.
		r := do(t, http.MethodPost, s.URL+p, []byte(ok), "Content-Type", "application/json", "Authorization", bearer, "X-Request-Timeout", "soon")
		require.Equal(t, 400, r.Status, r.String())
		require.Contains(t, string(r.Body), "X-Request-Timeout")
		runCorpus(t, s, cases, func() reply { return s.postJSON(t, p, ok) })
	})

	t.Run("audio", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MAX_AUDIO_SIZE_BYTES": "200000"})
		p := "/audio/transcriptions"
		wav := wavPCM16(16000, tone(16000, 1, 440, 0.3))
		b64 := base64.StdEncoding.EncodeToString(wav)
		header := wav[:44]
		lying := append([]byte{}, header...)
		binary.LittleEndian.PutUint32(lying[40:], 0x7FFFFFF0) // data size far beyond the file
		mono0 := append([]byte{}, wav...)
		binary.LittleEndian.PutUint16(mono0[22:], 0) // zero channels
		mp := func(parts ...formPart) (string, []byte) { return multipartBody(t, parts...) }
		ctNoFile, noFile := mp(field("stream", "true"))
		ctBadBool, badBool := mp(file("a.wav", "audio/wav", wav), field("stream", "maybe"))
		ctText, textFile := mp(file("a.mp3", "audio/mpeg", []byte("this is not audio at all, just text")))
		cases := []badCase{
			{"empty body", "", p, "application/json", nil, false, 422, "json_invalid"},
			{"json missing file", "", p, "application/json", jsonBody(`{"stream":false}`), false, 422, `"file"`},
			{"file not a string", "", p, "application/json", jsonBody(`{"file":123}`), false, 422, "string_type"},
			{"broken base64", "", p, "application/json", jsonBody(`{"file":"@@@@"}`), false, 400, "base64"},
			{"empty file", "", p, "application/json", jsonBody(`{"file":""}`), false, 400, "empty"},
			{"text as audio", "", p, "application/json", jsonBody(`{"file":"` + base64.StdEncoding.EncodeToString([]byte("hello world, not audio")) + `"}`), false, 415, "WAV"},
			{"header only wav", "", p, "application/json", jsonBody(`{"file":"` + base64.StdEncoding.EncodeToString(header) + `"}`), false, 400, ""},
			{"lying data size", "", p, "application/json", jsonBody(`{"file":"` + base64.StdEncoding.EncodeToString(lying) + `"}`), false, 400, "bytes"},
			{"zero channels", "", p, "application/json", jsonBody(`{"file":"` + base64.StdEncoding.EncodeToString(mono0) + `"}`), false, 400, "channel"},
			{"stream not bool", "", p, "application/json", jsonBody(`{"file":"` + b64 + `","stream":"maybe"}`), false, 422, "bool_parsing"},
			{"text/plain", "", p, "text/plain", []byte("hi"), false, 400, "multipart/form-data"},
			{"no content type", "", p, "", []byte("hi"), false, 400, "multipart/form-data"},
			{"multipart without file", "", p, ctNoFile, noFile, false, 400, "multipart/form-data"},
			{"multipart bad bool", "", p, ctBadBool, badBool, false, 422, "bool_parsing"},
			{"multipart text file", "", p, ctText, textFile, false, 415, "WAV"},
			{"multipart no boundary", "", p, "multipart/form-data", []byte("--x\r\n"), false, 400, "boundary"},
			{"multipart garbage", "", p, "multipart/form-data; boundary=zzz", []byte("not a multipart body"), false, 400, "multipart"},
			{"file too large", "", p, "application/json", jsonBody(`{"file":"` + base64.StdEncoding.EncodeToString(make([]byte, 250000)) + `"}`), false, 413, ""},
			{"no auth", "", p, "application/json", jsonBody(`{"file":"` + b64 + `"}`), true, 401, ""},
		}
		runCorpus(t, s, cases, func() reply { return s.postJSON(t, p, `{"file":"`+b64+`"}`) })
	})

	t.Run("cnn", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
		p := "/cnn/search-image"
		img := base64.StdEncoding.EncodeToString(smallPNG(t))
		bomb := base64.StdEncoding.EncodeToString(pngBomb(100000, 100000))
		truncated := base64.StdEncoding.EncodeToString(smallPNG(t)[:60])
		ctNoFile, noFile := multipartBody(t, field("top_k", "3"))
		cases := []badCase{
			{"empty body", "", p, "application/json", nil, false, 422, "json_invalid"},
			{"missing prompt", "", p, "application/json", jsonBody(`{}`), false, 422, `"prompt"`},
			{"prompt number", "", p, "application/json", jsonBody(`{"prompt":1}`), false, 422, "string_type"},
			{"broken base64", "", p, "application/json", jsonBody(`{"prompt":"%%%"}`), false, 422, "Invalid base64 image"},
			{"not an image", "", p, "application/json", jsonBody(`{"prompt":"` + base64.StdEncoding.EncodeToString([]byte("plain text")) + `"}`), false, 400, "image"},
			{"truncated png", "", p, "application/json", jsonBody(`{"prompt":"` + truncated + `"}`), false, 400, "image"},
			{"decompression bomb", "", p, "application/json", jsonBody(`{"prompt":"` + bomb + `"}`), false, 413, "pixels"},
			{"top_k zero", "", p, "application/json", jsonBody(`{"prompt":"` + img + `","top_k":0}`), false, 422, "top_k"},
			{"min_confidence 101", "", p, "application/json", jsonBody(`{"prompt":"` + img + `","min_confidence":101}`), false, 422, "min_confidence"},
			{"bad response_format", "", p, "application/json", jsonBody(`{"prompt":"` + img + `","response_format":"xml"}`), false, 422, "response_format"},
			{"multipart without file", "", p, ctNoFile, noFile, false, 422, `"file"`},
			{"no auth", "", p, "application/json", jsonBody(`{"prompt":"` + img + `"}`), true, 401, ""},
		}
		runCorpus(t, s, cases, func() reply { return s.postJSON(t, p, fmt.Sprintf(`{"prompt":%q}`, img)) })
	})
}

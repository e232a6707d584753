package tests

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Atomic admission (issue 21 items 2 and 3), on the real binary.

// jobsTotal sums tt_media_server_jobs_total over workers and outcomes: the jobs that reached
// a worker.
func jobsTotal(t *testing.T, s *server) (ok, other int) {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^tt_media_server_jobs_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)`)
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		if m[1] == "ok" {
			ok += n
		} else {
			other += n
		}
	}
	return ok, other
}

// TestMultiImageAdmissionUnderOverload: 40 concurrent number_of_images=4 requests against two
// workers and MAX_QUEUE_SIZE 5 (the overload: before, 0 of 300 succeeded and most
// admitted jobs were thrown away). Every answer is 200 with 4 images or 429 before any of its
// images ran: the device ran exactly 4 jobs per success, none half-done. Clients that retry
// after Retry-After, as the SDKs do, all get their images.
func TestMultiImageAdmissionUnderOverload(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "2",
		"MAX_QUEUE_SIZE": "5", "MOCK_STEP_SECONDS": "0.004"})
	waitAllWorkers(t, s, 2)
	okBefore, otherBefore := jobsTotal(t, s)
	const n = 40
	statuses := make([]int, n)
	firstTry := make([]int, n)
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for i := range n {
		wg.Go(func() {
			var r reply
			for try := 0; ; try++ {
				r = s.postJSON(t, "/image/generations", `{"prompt":"Volcano on a beach","guidance_scale":7.0,"num_inference_steps":12,"number_of_images":4,"seed":`+strconv.Itoa(i)+`}`)
				if try == 0 {
					firstTry[i] = r.Status
				}
				if r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
					break
				}
				ms, err := strconv.Atoi(r.Header.Get("Retry-After-Ms"))
				require.NoError(t, err)
				time.Sleep(time.Duration(min(ms, 2000)) * time.Millisecond)
			}
			statuses[i] = r.Status
			switch r.Status {
			case http.StatusOK:
				var out struct{ Images []string }
				r.JSON(t, &out)
				require.Len(t, out.Images, 4)
			case http.StatusTooManyRequests:
				require.NotEmpty(t, r.Header.Get("Retry-After"))
			default:
				t.Errorf("request %d: %s", i, r)
			}
		})
	}
	wg.Wait()
	okN, okFirst := 0, 0
	for i, st := range statuses {
		if st == http.StatusOK {
			okN++
		}
		if firstTry[i] == http.StatusOK {
			okFirst++
		}
	}
	var ok, other int
	require.Eventually(t, func() bool { ok, other = jobsTotal(t, s); return ok-okBefore == 4*okN }, 5*time.Second, 20*time.Millisecond,
		"device jobs must be exactly 4 per successful request")
	t.Logf("%d of %d four-image requests admitted at the first try, %d after retrying on 429; %d device jobs, %d not ok",
		okFirst, n, okN, ok-okBefore, other-otherBefore)
	require.Equal(t, n, okN, "every client retrying on 429 gets its images")
	require.Equal(t, otherBefore, other, "no job was cancelled or failed half-way")
}

// TestRequestThatCanNeverFit: number_of_images 4 with MAX_QUEUE_SIZE 2 can never be admitted:
// 400 naming both, and no x-should-retry: true (a retry loop would never end).
func TestRequestThatCanNeverFit(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MAX_QUEUE_SIZE": "2"})
	r := s.postJSON(t, "/image/generations", `{"prompt":"x","guidance_scale":7.0,"num_inference_steps":12,"number_of_images":4}`)
	require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
	require.Contains(t, string(r.Body), "number_of_images=4")
	require.Contains(t, string(r.Body), "MAX_QUEUE_SIZE is 2")
	require.Empty(t, r.Header.Get("Retry-After"))
	require.NotEqual(t, "true", r.Header.Get("X-Should-Retry"))
	r = s.postJSON(t, "/v1/images/generations", `{"prompt":"x","n":4}`)
	require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
	require.Contains(t, string(r.Body), "MAX_QUEUE_SIZE is 2")
	require.NotEqual(t, "true", r.Header.Get("X-Should-Retry"))
}

// TestFanoutAdmissionUnderOverload: 12 concurrent 3-minute transcriptions fanned out over two
// workers with MAX_QUEUE_SIZE 2 (before: most failed after some chunks had run). Each answer is
// 200 or a 429 before any chunk ran: the chunk jobs run equal the chunks of the successes, and
// clients retrying after Retry-After all get their transcription.
func TestFanoutAdmissionUnderOverload(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_DEVICES_COUNT": "2",
		"MAX_QUEUE_SIZE": "2", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.002", "ALLOW_AUDIO_FANOUT": "true"})
	waitAllWorkers(t, s, 2)
	wav := wavPCM16(16000, speechLike())
	okBefore, otherBefore := jobsTotal(t, s)
	const n = 12
	chunks := make([]int, n)
	firstOK := make([]bool, n)
	deadline := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var r reply
			for try := 0; ; try++ {
				r = s.postMultipart(t, audioPath, file("long.wav", "audio/wav", wav), field("is_preprocessing_enabled", "true"))
				if try == 0 && r.Status == http.StatusOK {
					firstOK[i] = true
				}
				if r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
					break
				}
				ms, err := strconv.Atoi(r.Header.Get("Retry-After-Ms"))
				require.NoError(t, err)
				time.Sleep(time.Duration(min(ms, 2000)) * time.Millisecond)
			}
			switch r.Status {
			case http.StatusOK:
				c, err := strconv.Atoi(r.Header.Get("X-Transcription-Chunks"))
				require.NoError(t, err)
				require.Greater(t, c, 1, "fanned out")
				chunks[i] = c
			case http.StatusTooManyRequests:
			default:
				t.Errorf("request %d: %s", i, r)
			}
		})
	}
	wg.Wait()
	want, okN, okFirst := 0, 0, 0
	for i, c := range chunks {
		want += c
		if c > 0 {
			okN++
		}
		if firstOK[i] {
			okFirst++
		}
	}
	var ok, other int
	require.Eventually(t, func() bool { ok, other = jobsTotal(t, s); return ok-okBefore == want }, 5*time.Second, 20*time.Millisecond,
		"chunk jobs run must be the chunks of the successful requests")
	t.Logf("%d of %d fanned-out transcriptions admitted at the first try, %d after retrying on 429; %d chunk jobs run, %d not ok",
		okFirst, n, okN, ok-okBefore, other-otherBefore)
	require.Equal(t, n, okN, "every client retrying on 429 gets its transcription")
	require.Equal(t, otherBefore, other)
}

package video

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Info is what ffprobe and the MP4's box order say about an encoded file.
type Info struct {
	Codec, Profile, PixFmt string
	Level                  int
	Width, Height          int
	FPS                    float64
	Frames                 int
	// Duration is the video stream's length in seconds.
	Duration float64
	// Audio is the first audio stream ("" codec: none).
	Audio AudioInfo
	// Boxes are the file's top-level MP4 boxes in order ("ftyp", "moov", "mdat", ...): with
	// +faststart moov comes before mdat, so a player can start before the download ends.
	Boxes []string
}

// AudioInfo is what ffprobe says of an audio stream.
type AudioInfo struct {
	Codec      string
	SampleRate int
	Channels   int
	Duration   float64 // seconds
}

// MoovFirst reports whether the index (moov) precedes the media data (mdat).
func (i Info) MoovFirst() bool {
	for _, b := range i.Boxes {
		switch b {
		case "moov":
			return true
		case "mdat":
			return false
		}
	}
	return false
}

// Probe describes the MP4 at path with ffprobe (counting its frames) and its box walk.
func Probe(ctx context.Context, path string) (Info, error) {
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		return Info{}, fmt.Errorf("video: ffprobe is not installed (Debian ffmpeg): %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,profile,pix_fmt,level,width,height,r_frame_rate,nb_read_frames,duration",
		"-of", "json", "file:"+path)
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return Info{}, fmt.Errorf("video: ffprobe %s: %w", path, err)
	}
	var doc struct {
		Streams []struct {
			CodecName    string `json:"codec_name"`
			Profile      string `json:"profile"`
			PixFmt       string `json:"pix_fmt"`
			Level        int    `json:"level"`
			Width        int    `json:"width"`
			Height       int    `json:"height"`
			RFrameRate   string `json:"r_frame_rate"`
			NbReadFrames string `json:"nb_read_frames"`
			Duration     string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Streams) == 0 {
		return Info{}, fmt.Errorf("video: ffprobe found no video stream in %s (%v)", path, err)
	}
	s := doc.Streams[0]
	info := Info{Codec: s.CodecName, Profile: s.Profile, PixFmt: s.PixFmt, Level: s.Level, Width: s.Width, Height: s.Height}
	info.Frames, _ = strconv.Atoi(s.NbReadFrames)
	info.Duration, _ = strconv.ParseFloat(s.Duration, 64)
	if info.Audio, err = probeAudio(ctx, bin, path); err != nil {
		return Info{}, err
	}
	if num, den, ok := strings.Cut(s.RFrameRate, "/"); ok {
		n, _ := strconv.ParseFloat(num, 64)
		d, _ := strconv.ParseFloat(den, 64)
		if d > 0 {
			info.FPS = n / d
		}
	}
	info.Boxes, err = TopBoxes(path)
	return info, err
}

// probeAudio describes the first audio stream of path (zero when there is none).
func probeAudio(ctx context.Context, bin, path string) (AudioInfo, error) {
	cmd := exec.CommandContext(ctx, bin, "-v", "error", "-select_streams", "a:0",
		"-show_entries", "stream=codec_name,sample_rate,channels,duration", "-of", "json", "file:"+path)
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return AudioInfo{}, fmt.Errorf("video: ffprobe %s (audio): %w", path, err)
	}
	var doc struct {
		Streams []struct {
			CodecName  string `json:"codec_name"`
			SampleRate string `json:"sample_rate"`
			Channels   int    `json:"channels"`
			Duration   string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return AudioInfo{}, fmt.Errorf("video: ffprobe %s (audio): %w", path, err)
	}
	if len(doc.Streams) == 0 {
		return AudioInfo{}, nil
	}
	a := doc.Streams[0]
	info := AudioInfo{Codec: a.CodecName, Channels: a.Channels}
	info.SampleRate, _ = strconv.Atoi(a.SampleRate)
	info.Duration, _ = strconv.ParseFloat(a.Duration, 64)
	return info, nil
}

// TopBoxes lists the top-level MP4 box types of the file at path.
func TopBoxes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var boxes []string
	var off int64
	for {
		var hdr [16]byte
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			if errors.Is(err, io.EOF) {
				return boxes, nil
			}
			return nil, err
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		boxes = append(boxes, string(hdr[4:8]))
		switch size {
		case 0:
			return boxes, nil
		case 1:
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				return nil, err
			}
			size = int64(binary.BigEndian.Uint64(hdr[8:16]))
		}
		if size < 8 {
			return nil, fmt.Errorf("video: bad box size %d at %d", size, off)
		}
		off += size
	}
}

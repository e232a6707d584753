package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
)

// runResetCommand runs RESET_DEVICE_COMMAND through the shell with the groups' chips in
// TT_VISIBLE_DEVICES, so a reset script can scope itself to them.
func runResetCommand(ctx context.Context, command string, groups []string, log *slog.Logger) error {
	if strings.TrimSpace(command) == "" {
		return nil
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), "TT_VISIBLE_DEVICES="+strings.Join(groups, ","))
	out, err := cmd.CombinedOutput()
	log.Info("device reset command ran", "command", command, "groups", groups, "output", strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("RESET_DEVICE_COMMAND %q: %w", command, err)
	}
	return nil
}

package replica

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchSettle is how long the config directory must be quiet before the file
// is read again: an editor's save or a ConfigMap update is a burst of events
// (create, write, chmod, rename), and one read after the burst is enough.
const watchSettle = 100 * time.Millisecond

// watchConfig reloads the config file when it changes, until ctx ends.
//
// It watches the file's directory, not the file: editors replace a file by
// renaming a new one over it, and Kubernetes updates a mounted ConfigMap by
// atomically swapping the directory's "..data" symlink, so the file itself
// (a symlink into ..data) never sees an event and a watch on the old inode
// goes quiet. When the path is a symlink into another directory, that
// directory is watched too, so an edit of the target is seen. Any event
// starts a coalescing timer; when it fires, reload reads the file and acts
// only if its content hash changed.
func (r *replica) watchConfig(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config watch: %w", err)
	}
	defer w.Close()
	watched := map[string]bool{}
	follow := func() {
		for _, dir := range configDirs(r.opts.ConfigPath) {
			if watched[dir] {
				continue
			}
			if err := w.Add(dir); err != nil {
				r.log.Warn("cannot watch config directory; SIGHUP still reloads", "dir", dir, "err", err)
				continue
			}
			watched[dir] = true
		}
	}
	follow()
	if len(watched) == 0 {
		return nil
	}
	r.log.Info("watching the config file for changes", "file", r.opts.ConfigPath)

	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename) {
				// A watched directory that goes away (an old ConfigMap
				// generation) drops out of the watch by itself.
				delete(watched, ev.Name)
			}
			settle.Reset(watchSettle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// An overflow lost events: read the file anyway.
			r.log.Warn("config watch", "err", err)
			settle.Reset(watchSettle)
		case <-settle.C:
			r.reload(true)
			follow()
		}
	}
}

// configDirs are the directories whose events can change what path reads:
// its own, and the one its symlinks lead to.
func configDirs(path string) []string {
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if d := filepath.Dir(real); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

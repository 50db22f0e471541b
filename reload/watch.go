package reload

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDebounce is how long a watch waits after the last change it sees
// before it reloads: an editor's save, or a ConfigMap's swap of its ..data
// link, is several events.
const WatchDebounce = 250 * time.Millisecond

// Watch names the files of a configuration laid out as heddle reads it
// (config.Options), for Reloader.Start to reload when they change. It
// watches their directories rather than the files: a Kubernetes ConfigMap
// volume replaces its files by swapping its ..data link (a rename, not a
// write), and an editor often saves by rename too.
type Watch struct {
	// Config is the deployment file (config/api.yaml): a change of
	// anything in its directory, which holds the overlays too, counts.
	Config string
	// Agents is the agents directory: a change in it, or in an agent's
	// directory, counts. An agent's directory made later is watched from
	// the reload after it appears.
	Agents string
	// Lock is the lock file, or "" for none: in its directory (often the
	// working directory) only a change of the lock itself counts, unless
	// that is Config's or Agents' directory too.
	Lock string
}

// watcher watches the directories of a Watch; after a change and
// WatchDebounce of quiet, it asks for a reload.
type watcher struct {
	w                    *fsnotify.Watcher
	log                  *slog.Logger
	dirs                 func() []string // every directory to watch, as the agents directory holds now
	configDir, agentsDir string
	lockDir, lockBase    string
	wg                   sync.WaitGroup
}

// startWatch starts watching what w names; reload is asked (it must not
// block) after each batch of changes.
func startWatch(w Watch, log *slog.Logger, reload func()) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	wt := &watcher{w: fw, log: log, configDir: filepath.Clean(filepath.Dir(w.Config)), agentsDir: filepath.Clean(w.Agents)}
	if w.Lock != "" {
		wt.lockDir, wt.lockBase = filepath.Clean(filepath.Dir(w.Lock)), filepath.Base(w.Lock)
	}
	wt.dirs = func() []string {
		dirs := []string{wt.configDir, wt.agentsDir}
		entries, _ := os.ReadDir(w.Agents)
		for _, d := range entries {
			p := filepath.Join(w.Agents, d.Name())
			if fi, err := os.Stat(p); err == nil && fi.IsDir() && !strings.HasPrefix(d.Name(), "..") {
				dirs = append(dirs, p)
			}
		}
		if wt.lockDir != "" {
			dirs = append(dirs, wt.lockDir)
		}
		slices.Sort(dirs)
		return slices.Compact(dirs)
	}
	wt.add()
	wt.wg.Add(1)
	go wt.loop(reload)
	return wt, nil
}

// add watches every directory there is now: a new agent's is watched from
// the reload after it appears; a removed one's watch ends by itself.
func (w *watcher) add() {
	for _, d := range w.dirs() {
		if err := w.w.Add(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("cannot watch a directory of the configuration", "dir", d, "error", err.Error())
		}
	}
}

// relevant reports an event that may change the configuration: anything
// but a change of mode, except that in the lock file's directory (often
// the working directory) only the lock itself counts, unless it is also
// a configuration directory.
func (w *watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	dir := filepath.Clean(filepath.Dir(ev.Name))
	return dir != w.lockDir || filepath.Base(ev.Name) == w.lockBase || dir == w.configDir || dir == w.agentsDir
}

func (w *watcher) loop(reload func()) {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				w.log.Debug("configuration changed", "file", ev.Name, "op", ev.Op.String())
				timer.Reset(WatchDebounce)
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("watching the configuration failed; SIGHUP still reloads", "error", err.Error())
		case <-timer.C:
			w.add()
			reload()
		}
	}
}

// close stops watching and waits for the loop to end.
func (w *watcher) close() {
	_ = w.w.Close()
	w.wg.Wait()
}

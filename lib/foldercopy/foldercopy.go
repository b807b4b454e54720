// Package foldercopy copies a user's folder where a run may write: probe
// scale's vaults, never the folder itself.
package foldercopy

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Copy copies the folder src into a new folder of the same name
// in parent and returns its path: a run writes its changes (and a server
// its caches) into the copy, never into the user's folder. Modes and
// modification times are kept; a symbolic link is kept when it points
// inside src, and refused when it leads out of it (the copy would write
// through it). Only folders, files and links are copied.
func Copy(src, parent string) (string, error) {
	root, err := filepath.Abs(src)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", err
	}
	dst := filepath.Join(parent, filepath.Base(root))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.Mkdir(to, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			return copyLink(root, dst, p, to)
		case mode.IsRegular():
			return copyFile(p, to, info)
		}
		return fmt.Errorf("%s: not a file, folder or link", p)
	})
	if err != nil {
		return "", fmt.Errorf("copying %s: %w", src, err)
	}
	// Folders get their times once their files are in.
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return os.Chtimes(filepath.Join(dst, rel), info.ModTime(), info.ModTime())
	})
	if err != nil {
		return "", fmt.Errorf("copying %s: %w", src, err)
	}
	return dst, nil
}

// copyLink recreates the link at p, which must resolve inside root, at to,
// pointing at the same place in the copy dst.
func copyLink(root, dst, p, to string) error {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("link %s: %w", p, err)
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("link %s points outside the folder (to %s)", p, target)
	}
	link, err := filepath.Rel(filepath.Dir(to), filepath.Join(dst, rel))
	if err != nil {
		return err
	}
	return os.Symlink(link, to)
}

func copyFile(from, to string, info fs.FileInfo) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, info.ModTime(), info.ModTime())
}

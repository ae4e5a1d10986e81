package cmpservice

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client calls the service as Argo CD's repo-server does: the tests' and
// the benchmarks' stand-in for it (the contract suite drives the service
// with Argo CD's own client).
type Client struct {
	conn *grpc.ClientConn
}

// Dial connects to the service on a unix socket.
func Dial(socket string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec{}), grpc.MaxCallRecvMsgSize(100<<20)))
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Generate streams dir (the Application's directory, as the root of the
// stream) with env ("NAME=value") and returns the manifests.
func (c *Client) Generate(ctx context.Context, dir string, env []string) ([]string, error) {
	var resp manifestResponse
	if err := c.stream(ctx, "GenerateManifest", dir, env, &resp); err != nil {
		return nil, err
	}
	return resp.Manifests, nil
}

// ParametersJSON streams dir with env and returns the announcement as the
// parameters command prints it (JSON).
func (c *Client) ParametersJSON(ctx context.Context, dir string, env []string) ([]byte, error) {
	var resp parametersResponse
	if err := c.stream(ctx, "GetParametersAnnouncement", dir, env, &resp); err != nil {
		return nil, err
	}
	return json.Marshal(resp.Announcements)
}

func (c *Client) stream(ctx context.Context, method, dir string, env []string, resp any) error {
	tgz, err := Tgz(dir)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(tgz)
	md := &metadata{AppName: filepath.Base(dir), AppRelPath: ".", Checksum: hex.EncodeToString(sum[:]), Size: int64(len(tgz))}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		md.Env = append(md.Env, envEntry{Name: name, Value: value})
	}
	st, err := c.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, "/"+serviceDesc.ServiceName+"/"+method)
	if err != nil {
		return err
	}
	if err := st.SendMsg(&streamRequest{Metadata: md}); err != nil {
		return err
	}
	const chunk = 1 << 10 // the repo-server's default
	for len(tgz) > 0 {
		n := min(chunk, len(tgz))
		if err := st.SendMsg(&streamRequest{Chunk: tgz[:n], HasChunk: true}); err != nil {
			break // the server answered early: RecvMsg says how
		}
		tgz = tgz[n:]
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	return st.RecvMsg(resp)
}

// Tgz packs dir as the repo-server packs a repository: a gzipped tar of its
// directories, regular files and symbolic links, named relative to dir.
func Tgz(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

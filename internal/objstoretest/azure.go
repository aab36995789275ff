package objstoretest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azurite's well-known development account (the same in every Azurite).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzuriteBinary returns the path of Azurite's blob service script
// (azurite-blob, run with node), or "" when it is not installed.
func AzuriteBinary() string {
	p := os.Getenv(EnvAzurite)
	if p == "" {
		p = filepath.Join(cacheDir(), "storage", "azurite-"+AzuriteVersion, "node_modules", "azurite", "dist", "src", "blob", "main.js")
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Azure is a running Azurite blob service (the Azure Blob API in a local
// folder), reached as account AzuriteAccount with AzuriteKey.
type Azure struct {
	Endpoint string // 127.0.0.1:PORT, what adls.endpoint takes

	proc process
}

// StartAzurite starts Azurite's blob service on a free port for t, stopped
// when t ends. It skips t when Azurite or node is not installed (see Skip).
func StartAzurite(t testing.TB) *Azure {
	t.Helper()
	script := AzuriteBinary()
	if script == "" {
		Skip(t, "Azurite "+AzuriteVersion+" is not installed: run `bash .ci/storage.sh` (or set "+EnvAzurite+")")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		Skip(t, "node not found: Azurite runs on Node.js")
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		a := &Azure{Endpoint: fmt.Sprintf("127.0.0.1:%d", port)}
		a.proc, err = startProcess(fmt.Sprintf("azurite on port %d", port), []string{node, script, "--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port),
			"--location", dir, "--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry"},
			"http://"+a.Endpoint+"/"+AzuriteAccount+"?comp=list", 60*time.Second)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(a.Stop)
		return a
	}
	t.Fatal(lastErr)
	return nil
}

// Props returns the storage settings that reach Azurite (shared key).
func (a *Azure) Props() map[string]string {
	return map[string]string{
		"adls.endpoint":                     a.Endpoint,
		"adls.protocol":                     "http",
		"adls.auth.shared-key.account.name": AzuriteAccount,
		"adls.auth.shared-key.account.key":  AzuriteKey,
	}
}

// Location returns the abfs:// location of path in container.
func (a *Azure) Location(containerName, path string) string {
	return "abfs://" + containerName + "@" + AzuriteAccount + ".dfs.core.windows.net/" + strings.TrimPrefix(path, "/")
}

func (a *Azure) client(t testing.TB, containerName string) *container.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential("http://"+a.Endpoint+"/"+AzuriteAccount+"/"+containerName, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CreateContainer creates a container (a bucket).
func (a *Azure) CreateContainer(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.client(t, name).Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("create container %s on Azurite: %v", name, err)
	}
}

// Upload copies the local folder dir to the container under prefix/.
func (a *Azure) Upload(t testing.TB, dir, containerName, prefix string) {
	t.Helper()
	c := a.client(t, containerName)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		key := strings.TrimPrefix(prefix+"/"+filepath.ToSlash(rel), "/")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.NewBlockBlobClient(key).UploadBuffer(ctx, b, nil); err != nil {
			return fmt.Errorf("upload %s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("upload %s to Azurite container %s/%s: %v", dir, containerName, prefix, err)
	}
}

// List returns the names of the blobs under prefix in the container.
func (a *Azure) List(t testing.TB, containerName, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	pager := a.client(t, containerName).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("list Azurite container %s/%s: %v", containerName, prefix, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name != nil {
				names = append(names, *b.Name)
			}
		}
	}
	return names
}

// Stop stops Azurite. Safe to call more than once.
func (a *Azure) Stop() { a.proc.stop() }

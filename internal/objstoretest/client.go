package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// client is a plain S3 client of the server, for setting up and checking
// tests independently of floe's file IO.
type client struct{ c *s3.Client }

func newS3Client(s *S3) client {
	return client{s3.New(s3.Options{
		Region:                     s.Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})}
}

func (c client) createBucket(ctx context.Context, name string) error {
	_, err := c.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// Upload copies the local folder dir to s3://bucket/prefix/ (for tables
// written by an engine that cannot reach the server itself).
func (s *S3) Upload(t testing.TB, dir, bucket, prefix string) {
	t.Helper()
	c := newS3Client(s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
		_, err = c.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)})
		return err
	})
	if err != nil {
		t.Fatalf("upload %s to s3://%s/%s: %v", dir, bucket, prefix, err)
	}
}

// Object is a stored object.
type Object struct {
	Key  string
	Size int64
}

// List returns the objects under s3://bucket/prefix, sorted by key.
func (s *S3) List(t testing.TB, bucket, prefix string) []Object {
	t.Helper()
	out, err := s.list(bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *S3) list(bucket, prefix string) ([]Object, error) {
	c := newS3Client(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []Object
	p := s3.NewListObjectsV2Paginator(c.c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Get returns the content of s3://bucket/key.
func (s *S3) Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	c := newS3Client(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := c.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer o.Body.Close()
	b, err := io.ReadAll(o.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

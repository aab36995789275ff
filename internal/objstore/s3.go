package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"

	// iceberg-go's own s3:// factory is registered first so that the init
	// below replaces it deterministically, whoever else imports it.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// S3Schemes are the URI schemes floe's S3 file IO serves (iceberg-go's list).
var S3Schemes = []string{"s3", "s3a", "s3n", "oss"}

func init() {
	for _, scheme := range S3Schemes {
		iceio.Unregister(scheme)
		iceio.Register(scheme, newS3IO)
	}
}

// newS3IO is the registered factory: the location's bucket through a cached
// S3 client built from props.
func newS3IO(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	loc := parsed.Scheme + "://" + parsed.Host
	if parsed.Host == "" {
		return nil, fmt.Errorf("%s: no bucket in the location", parsed.String())
	}
	c, err := clientFor(ctx, loc, props)
	if err != nil {
		return nil, err
	}
	bucket, err := s3blob.OpenBucketV2(ctx, c.client, parsed.Host, &s3blob.Options{RequestChecksumCalculation: c.checksum})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	extract := blobfs.DefaultObjectLocationExtractor(parsed.Host, S3Schemes...)
	return &blobIO{FileIO: blobfs.New(ctx, bucket, extract), bucket: bucket, extract: extract, ctx: ctx, retry: c.retry,
		bucketName: parsed.Host, endpoint: c.endpoint, region: c.region, accessKey: c.accessKey}, nil
}

// s3Client is a configured client, shared by every IO with the same settings
// so that connections are reused across the many IOs iceberg-go opens.
type s3Client struct {
	client   *s3.Client
	checksum aws.RequestChecksumCalculation
	retry    retryPolicy

	endpoint, region, accessKey string // for error messages
}

var (
	clientsMu sync.Mutex
	clients   = map[string]*s3Client{}
)

const maxCachedClients = 64

// cacheKey identifies the settings a client was built from: the s3.* and
// client.* properties and the AWS_* environment.
func cacheKey(props map[string]string) string {
	var parts []string
	for k, v := range props {
		if strings.HasPrefix(k, "s3.") || strings.HasPrefix(k, "client.") {
			parts = append(parts, k+"="+v)
		}
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			parts = append(parts, "env:"+kv)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x00")
}

func clientFor(ctx context.Context, loc string, props map[string]string) (*s3Client, error) {
	key := cacheKey(props)
	clientsMu.Lock()
	c, ok := clients[key]
	clientsMu.Unlock()
	if ok {
		return c, nil
	}
	c, err := newS3Client(ctx, loc, props)
	if err != nil {
		return nil, err
	}
	clientsMu.Lock()
	if len(clients) >= maxCachedClients {
		clear(clients)
	}
	clients[key] = c
	clientsMu.Unlock()
	return c, nil
}

func newS3Client(ctx context.Context, loc string, props map[string]string) (*s3Client, error) {
	s, err := parseS3Settings(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if s.remoteSigning {
		return nil, fmt.Errorf("%s: %s: remote request signing is not supported", loc, keyRemoteSigning)
	}
	cfg, err := awsConfig(ctx, loc, s)
	if err != nil {
		return nil, err
	}
	c := &s3Client{retry: s.retry, endpoint: s.endpoint, region: cfg.Region, accessKey: s.accessKey}
	if c.accessKey == "" {
		if cr, err := cfg.Credentials.Retrieve(ctx); err == nil {
			c.accessKey = cr.AccessKeyID
		}
	}
	switch s.checksum {
	case "when-required":
		c.checksum = aws.RequestChecksumCalculationWhenRequired
	case "when-supported":
		c.checksum = aws.RequestChecksumCalculationWhenSupported
	default:
		c.checksum = cfg.RequestChecksumCalculation
	}
	c.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if s.endpoint != "" {
			o.BaseEndpoint = aws.String(s.endpoint)
		}
		o.UsePathStyle = s.pathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
		o.RequestChecksumCalculation = c.checksum
		if c.checksum == aws.RequestChecksumCalculationWhenRequired {
			o.APIOptions = append(o.APIOptions, checksumWhenRequired)
		}
		o.APIOptions = append(o.APIOptions, addBudget(s.retry.budget))
	})
	return c, nil
}

// awsConfig loads the AWS configuration of s: the catalog's settings first,
// then the standard AWS environment, profiles and roles; a missing region
// or missing credentials is an error naming the settings and where floe
// looked.
func awsConfig(ctx context.Context, loc string, s s3Settings) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(newHTTPClient(s)),
		config.WithRetryer(func() aws.Retryer { return newRetryer(s.retry) }),
	}
	if s.region != "" {
		opts = append(opts, config.WithRegion(s.region))
	}
	if s.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.profile))
	}
	if s.accessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.accessKey, s.secretKey, s.sessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("%s: loading the AWS configuration: %w", loc, err)
	}
	profile := s.profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	if cfg.Region == "" {
		if s.endpoint == "" {
			return aws.Config{}, &SettingError{Location: loc, Setting: keyRegion,
				Problem: "no S3 region",
				Looked:  fmt.Sprintf("the catalog's %s and %s, AWS_REGION and AWS_DEFAULT_REGION, and profile %q of the AWS config files", keyRegion, keyClientRegion, profile)}
		}
		// Custom endpoints (MinIO, s3proxy, Ceph, ...) ignore the region,
		// but SigV4 signs with one.
		cfg.Region = "us-east-1"
	}
	if s.accessKey == "" {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return aws.Config{}, &SettingError{Location: loc, Setting: keyAccessKey + " and " + keySecretKey,
				Problem: "no S3 credentials",
				Looked:  fmt.Sprintf("the catalog's %s/%s, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile %q of the AWS config and credentials files, web identity, and container or instance roles", keyAccessKey, keySecretKey, profile),
				Err:     err}
		}
	}
	return cfg, nil
}

// SettingError is a storage setting that is missing or wrong.
type SettingError struct {
	Location string // the location being opened, s3://bucket
	Setting  string // the setting to give
	Problem  string // what is missing
	Looked   string // where floe looked
	Err      error  // the underlying error, if any
}

func (e *SettingError) Error() string {
	msg := fmt.Sprintf("%s: %s: set %s (floe looked in %s)", e.Location, e.Problem, e.Setting, e.Looked)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *SettingError) Unwrap() error { return e.Err }

// ErrNoSetting matches every SettingError.
var ErrNoSetting = errors.New("storage setting missing")

func (e *SettingError) Is(target error) bool { return target == ErrNoSetting }

package catalog

import (
	"fmt"
	"os"
)

// SparkConfig is the spark: block of a configuration file: where builds
// pushed down to Spark run, for one catalog (catalog.<name>.spark) or for
// every catalog and the embedded one (a top-level spark: block). Keys:
// remote (sc://HOST:PORT), catalog (the catalog's name on the Spark side
// when the server has it configured), engine (local, spark or auto),
// threshold (auto's, e.g. 8GiB) and conf (Spark session settings).
type SparkConfig struct {
	Remote, Catalog, Engine, Threshold string
	Conf                               map[string]string
}

// SparkSettings reads the spark: block that applies to the catalog name
// ("" = the embedded catalog) from the configuration file path (""
// = the default file; a missing default file is no block). The catalog's
// own block wins over the top-level one, key by key.
func SparkSettings(path, name string) (SparkConfig, error) {
	var out SparkConfig
	if path == "" {
		path = os.Getenv(EnvConfig)
	}
	if path == "" {
		path = defaultConfigFile()
	}
	if path == "" {
		return out, nil
	}
	if _, err := os.Stat(path); err != nil {
		return out, nil
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return out, err
	}
	apply := func(m map[string]any, where string) error {
		for k, v := range m {
			switch k {
			case "remote":
				out.Remote = fmt.Sprint(v)
			case "catalog":
				out.Catalog = fmt.Sprint(v)
			case "engine":
				out.Engine = fmt.Sprint(v)
			case "threshold":
				out.Threshold = fmt.Sprint(v)
			case "conf":
				cm, ok := v.(map[string]any)
				if !ok {
					return fmt.Errorf("%w: %s: %s.conf: want a mapping of Spark settings", ErrConfig, path, where)
				}
				if out.Conf == nil {
					out.Conf = map[string]string{}
				}
				for ck, cv := range cm {
					out.Conf[ck] = fmt.Sprint(cv)
				}
			default:
				return fmt.Errorf("%w: %s: %s: unknown key %q (keys: remote, catalog, engine, threshold, conf)", ErrConfig, path, where, k)
			}
		}
		return nil
	}
	if err := apply(cfg.Spark, "spark"); err != nil {
		return out, err
	}
	if name != "" {
		if m, ok := cfg.Catalogs[name]["spark"].(map[string]any); ok {
			if err := apply(m, "catalog."+name+".spark"); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

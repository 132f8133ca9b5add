// `dltrain make-dataset`: generates the shapes task (class folders), the shapes-seg task
// (image/label folders; prints the ClassNames and LabelIDs lines for a config), the
// rotated-digits regression task and the shapes-multi multi-label task (images + CSV tables),
// and (hidden modes) converts CIFAR-10 binary / MNIST IDX files to class folders for
// datasets/*.sh and benchmarks the data loader alone (bench-loader) for scripts/bench/data_vs_pil.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "data/batch_loader.h"
#include "data/binary_datasets.h"
#include "data/datastore.h"
#include "data/decode.h"
#include "data/rotated_digits.h"
#include "data/shapes.h"
#include "data/shapes_multi.h"
#include "data/shapes_seg.h"
#include "util/error.h"
#include "util/numbers.h"
#include "util/thread_pool.h"
#include "util/timer.h"

namespace dlt::app {
namespace {

struct MakeDatasetArgs {
  std::string kind, dir, from, size = "32x32";
  int classes = 4, per_class = 1000, count = 1000;
  bool per_class_given = false, count_given = false;  // shapes-seg: which of the two was set
  uint64_t seed = 0;
  double split = 0.2;
  // bench-loader
  int threads = 1, epochs = 1;
  int64_t batch_size = 64;
  bool augment = false, decode_only = false;
  std::string cache = "none", mode = "resize";
};

// "HxW" or "HxWxC" -> dims; C defaults to 3.
void parse_size(const std::string& s, int& h, int& w, int& c) {
  std::vector<int64_t> v;
  if (!parse_dims(s, &v) || v.size() < 2 || v.size() > 3 || (v.size() == 3 && v[2] != 1 && v[2] != 3))
    throw UsageError("--size '" + s + "' must look like 32x32 or 227x227x3");
  h = static_cast<int>(v[0]);
  w = static_cast<int>(v[1]);
  c = v.size() == 3 ? static_cast<int>(v[2]) : 3;
}

int run_bench(const MakeDatasetArgs& a) {
  int h, w, c;
  parse_size(a.size, h, w, c);
  DataOptions data;
  ImageDatastore ds(a.dir, data);
  Timer timer;
  int64_t images = 0;
  if (a.decode_only) {
    Image img;
    for (int e = 0; e < a.epochs; ++e)
      for (int64_t i = 0; i < ds.size(); ++i, ++images) decode_image(ds.path(i), c, img);
  } else {
    LoaderOptions o;
    o.input = Shape{h, w, c};
    o.batch_size = a.batch_size;
    o.shuffle = Shuffle::kNever;
    o.drop_last = false;
    o.training = a.augment;
    o.threads = a.threads;
    if (!parse_choice(a.cache, &o.cache))
      throw UsageError("--cache '" + a.cache + "' must be one of " + join(choice_names<Cache>(), ", "));
    if (!parse_choice(a.mode, &o.output_size_mode))
      throw UsageError("--mode '" + a.mode + "' must be one of " + join(choice_names<OutputSizeMode>(), ", "));
    if (a.augment) {  // the same augmentation as scripts/bench/data_vs_pil.py
      o.augment.rand_x_reflection = true;
      o.augment.rand_rotation[0] = -10;
      o.augment.rand_rotation[1] = 10;
      o.augment.rand_scale[0] = 0.9;
      o.augment.rand_scale[1] = 1.1;
      o.augment.rand_x_translation[0] = o.augment.rand_y_translation[0] = -3;
      o.augment.rand_x_translation[1] = o.augment.rand_y_translation[1] = 3;
    }
    BatchLoader loader(ds, o);
    Batch batch;
    for (int e = 0; e < a.epochs; ++e) {
      loader.start_epoch(e);
      while (loader.next(batch)) images += batch.size;
    }
  }
  const double s = timer.seconds();
  std::printf("bench-loader: %lld images in %.3f s: %.1f images/s (threads %d, %s%s)\n", static_cast<long long>(images),
              s, images / s, a.decode_only ? 1 : a.threads, a.decode_only ? "decode only" : a.size.c_str(),
              a.augment ? ", augment" : "");
  return 0;
}

// Prints a YAML flow list: [a, b, c].
template <typename T, typename F>
void print_list(const char* key, const std::vector<T>& v, F format) {
  std::printf("%s: [", key);
  for (size_t i = 0; i < v.size(); ++i) std::printf("%s%s", i ? ", " : "", format(v[i]).c_str());
  std::printf("]\n");
}

int run_shapes_seg(const MakeDatasetArgs& a) {
  if (a.per_class_given && a.count_given)
    throw UsageError("make-dataset shapes-seg: give --per-class or --count, not both");
  ShapesSegOptions o;
  int c;
  parse_size(a.size, o.height, o.width, c);
  if (c != 3) throw UsageError("--size '" + a.size + "': shapes-seg writes RGB images (HxW)");
  o.classes = a.classes;
  // --per-class N: N x classes pairs, as many images as `shapes` writes (each pair holds 1-4
  // of the classes, so each class appears in more than N images).
  if (a.per_class_given && (a.per_class < 1 || a.per_class > 1000000))
    throw UsageError("--per-class must be 1..1000000");
  o.count = a.per_class_given ? a.per_class * a.classes : a.count;
  o.seed = a.seed;
  o.test_fraction = a.split;
  Timer t;
  const int64_t n = write_shapes_seg_dataset(a.dir, o);
  std::fprintf(stderr,
               "make-dataset: wrote %lld image/label pairs (%d shape classes + background, "
               "%dx%d) to %s/{train,test}/{images,labels} in %.1f s; for the config's data:\n",
               static_cast<long long>(n), o.classes, o.height, o.width, a.dir.c_str(), t.seconds());
  std::vector<int> ids;
  for (int k = 0; k <= o.classes; ++k) ids.push_back(k);
  print_list("ClassNames", shapes_seg_class_names(o.classes), [](const std::string& s) { return s; });
  print_list("LabelIDs", ids, [](int v) { return std::to_string(v); });
  return 0;
}

// MNIST's IDX files when --from is not given: the shared datasets folder next to the checkout.
constexpr const char* kDefaultMnist = "../shared/datasets/mnist";

int run_rotated_digits(const MakeDatasetArgs& a) {
  if (a.per_class_given)
    throw UsageError("make-dataset rotated-digits takes --count (images per part), not --per-class");
  RotatedDigitsOptions o;
  o.from = a.from;
  if (o.from.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(kDefaultMnist, ec))
      throw UsageError(
          "make-dataset rotated-digits needs --from DIR: a folder with MNIST's train-images-idx3-ubyte and "
          "t10k-images-idx3-ubyte (.gz or not; the mirrors datasets/get-mnist.sh downloads from have them); " +
          std::string(kDefaultMnist) + " does not exist");
    o.from = kDefaultMnist;
  }
  o.count = a.count_given ? a.count : 5000;
  o.seed = a.seed;
  Timer t;
  const int64_t n = write_rotated_digits(a.dir, o);
  std::printf(
      "make-dataset: wrote %lld rotated digits (angles in [-45, 45] degrees) to %s/{train,test} and "
      "%s/{train,test}.csv (File,Angle) in %.1f s\n",
      static_cast<long long>(n), a.dir.c_str(), a.dir.c_str(), t.seconds());
  return 0;
}

int run_shapes_multi(const MakeDatasetArgs& a) {
  if (a.per_class_given) throw UsageError("make-dataset shapes-multi takes --count (images), not --per-class");
  ShapesMultiOptions o;
  int c;
  parse_size(a.size, o.height, o.width, c);
  if (c != 3) throw UsageError("--size '" + a.size + "': shapes-multi writes RGB images (HxW)");
  o.classes = a.classes;
  o.count = a.count;
  o.seed = a.seed;
  o.test_fraction = a.split;
  Timer t;
  const int64_t n = write_shapes_multi_dataset(a.dir, o);
  std::printf(
      "make-dataset: wrote %lld images with 1-3 shapes (%d kinds, %dx%d) to %s/{train,test} and "
      "%s/{train,test}.csv (File,Labels) in %.1f s\n",
      static_cast<long long>(n), o.classes, o.height, o.width, a.dir.c_str(), a.dir.c_str(), t.seconds());
  return 0;
}

int run(const MakeDatasetArgs& a) {
  if (a.kind == "shapes") {
    if (a.count_given)
      throw UsageError("--count is for shapes-seg, shapes-multi and rotated-digits; shapes takes --per-class");
    ShapesDatasetOptions o;
    int c;
    parse_size(a.size, o.height, o.width, c);
    o.classes = a.classes;
    o.per_class = a.per_class;
    o.seed = a.seed;
    o.test_fraction = a.split;
    Timer t;
    const int64_t n = write_shapes_dataset(a.dir, o);
    std::printf(
        "make-dataset: wrote %lld shape images (%d classes, %dx%d) to %s/{train,test} "
        "in %.1f s\n",
        static_cast<long long>(n), o.classes, o.height, o.width, a.dir.c_str(), t.seconds());
    return 0;
  }
  if (a.kind == "shapes-seg") return run_shapes_seg(a);
  if (a.kind == "rotated-digits") return run_rotated_digits(a);
  if (a.kind == "shapes-multi") return run_shapes_multi(a);
  if (a.kind == "cifar10-bin" || a.kind == "mnist-idx") {
    if (a.from.empty()) throw UsageError("make-dataset " + a.kind + " needs --from FOLDER");
    const int64_t n =
        a.kind == "cifar10-bin" ? convert_cifar10_binary(a.from, a.dir) : convert_mnist_idx(a.from, a.dir);
    std::printf("make-dataset: wrote %lld images to %s/{train,test}\n", static_cast<long long>(n), a.dir.c_str());
    return 0;
  }
  if (a.kind == "bench-loader") return run_bench(a);
  throw UsageError("make-dataset: unknown kind '" + a.kind +
                   "' (use shapes, shapes-seg, rotated-digits or shapes-multi)");
}

}  // namespace

Runner add_make_dataset(CLI::App& app) {
  auto args = std::make_shared<MakeDatasetArgs>();
  CLI::App* sub =
      app.add_subcommand("make-dataset",
                         "Generate a dataset: 'shapes' writes coloured shapes as PNG class folders, 'shapes-seg' "
                         "images with 1-4 shapes and their label PNGs (0 background, 1..K shapes, 255 void edges), "
                         "'rotated-digits' MNIST digits rotated by random angles with train.csv/test.csv "
                         "(File,Angle: regression), 'shapes-multi' images with 1-3 shapes with train.csv/test.csv "
                         "(File,Labels: multi-label)");
  sub->add_option("kind", args->kind, "Dataset kind: shapes, shapes-seg, rotated-digits or shapes-multi")->required();
  sub->add_option("dir", args->dir, "Output folder (gets train/ and test/)")->required();
  sub->add_option("--classes", args->classes, "Number of shape classes (shapes 2-8, shapes-seg 1-8, shapes-multi 2-8)")
      ->capture_default_str();
  CLI::Option* per_class = sub->add_option("--per-class", args->per_class,
                                           "Images per class, train and test together (shapes-seg: count = this x "
                                           "classes)")
                               ->capture_default_str();
  CLI::Option* count = sub->add_option("--count", args->count,
                                       "shapes-seg: image/label pairs, shapes-multi: images, train and test together; "
                                       "rotated-digits: images in each of train and test (default 5000)")
                           ->capture_default_str();
  sub->add_option("--size", args->size, "Image size HxW")->capture_default_str();
  sub->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  sub->add_option("--split", args->split, "Fraction written to test/ (shapes: of each class; not rotated-digits)")
      ->capture_default_str();
  sub->add_option("--from", args->from,
                  "rotated-digits: folder with MNIST's IDX files train-images-idx3-ubyte and t10k-images-idx3-ubyte "
                  "(.gz or not, as datasets/get-mnist.sh downloads them; default " +
                      std::string(kDefaultMnist) + " when it exists)");
  // Hidden: the loader benchmark (scripts/bench/data_vs_pil); --from also feeds the converters.
  sub->add_option("--threads", args->threads, "bench-loader: decode threads")->group("");
  sub->add_option("--epochs", args->epochs, "bench-loader: passes over the data")->group("");
  sub->add_option("--batch-size", args->batch_size, "bench-loader: batch size")->group("");
  sub->add_flag("--augment", args->augment, "bench-loader: augment")->group("");
  sub->add_flag("--decode-only", args->decode_only, "bench-loader: decode only")->group("");
  sub->add_option("--cache", args->cache, "bench-loader: cache mode")->group("");
  sub->add_option("--mode", args->mode, "bench-loader: OutputSizeMode")->group("");
  return [args, per_class, count] {
    args->per_class_given = per_class->count() > 0;
    args->count_given = count->count() > 0;
    return run(*args);
  };
}

}  // namespace dlt::app

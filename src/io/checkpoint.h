// A checkpoint folder: config.json, generation_config.json and one or more safetensors files
// (model.safetensors, or shards listed by model.safetensors.index.json). Opening reads only headers.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/reader.h"
#include "io/safetensors.h"

namespace g4 {

struct CheckpointTensor {
  TensorInfo info;  // info.name is the name as stored
  int file = 0;     // index into Checkpoint::files()
};

// Parses model.safetensors.index.json: the tensor names listed for each shard file. File names
// must be plain names inside the checkpoint folder.
Result<std::map<std::string, std::vector<std::string>>> ParseShardIndex(const std::string& text,
                                                                       const std::string& source);

class Checkpoint {
 public:
  // Opens every safetensors file of `dir` and validates their headers; with an index, every
  // tensor it lists must be in the file it names and every file's tensors must be listed.
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& dir);
  // A checkpoint over given readers (tests, hosts that stream files); names are the readers'.
  static Result<std::unique_ptr<Checkpoint>> FromReaders(std::vector<std::unique_ptr<Reader>> readers);

  const std::map<std::string, CheckpointTensor>& tensors() const { return tensors_; }
  const CheckpointTensor* Find(const std::string& stored_name) const;
  const Reader& file(int i) const { return *files_[i]; }
  size_t num_files() const { return files_.size(); }
  const std::string& dir() const { return dir_; }

 private:
  Status AddFile(std::unique_ptr<Reader> reader, const std::vector<std::string>* expected);

  std::string dir_;
  std::vector<std::unique_ptr<Reader>> files_;
  std::map<std::string, CheckpointTensor> tensors_;
};

}  // namespace g4

#include "io/checkpoint.h"

#include <set>

#include <nlohmann/json.hpp>

namespace g4 {

using nlohmann::json;

const CheckpointTensor* Checkpoint::Find(const std::string& stored_name) const {
  auto it = tensors_.find(stored_name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status Checkpoint::AddFile(std::unique_ptr<Reader> reader, const std::vector<std::string>* expected) {
  G4_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseSafetensorsHeader(*reader));
  const int index = static_cast<int>(files_.size());
  if (expected) {
    std::set<std::string> want(expected->begin(), expected->end());
    for (const auto& name : want) {
      if (!header.tensors.count(name)) {
        return DataLoss(reader->Name() + ": tensor " + name + " is listed in model.safetensors.index.json but not in the file");
      }
    }
    for (const auto& [name, info] : header.tensors) {
      if (!want.count(name)) {
        return DataLoss(reader->Name() + ": tensor " + name + " is not listed for this file in model.safetensors.index.json");
      }
    }
  }
  for (auto& [name, info] : header.tensors) {
    if (tensors_.count(name)) return DataLoss(reader->Name() + ": tensor " + name + " appears in two files");
    tensors_.emplace(name, CheckpointTensor{info, index});
  }
  files_.push_back(std::move(reader));
  return Status::Ok();
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::FromReaders(std::vector<std::unique_ptr<Reader>> readers) {
  auto ckpt = std::unique_ptr<Checkpoint>(new Checkpoint());
  for (auto& r : readers) G4_RETURN_IF_ERROR(ckpt->AddFile(std::move(r), nullptr));
  return ckpt;
}

Result<std::map<std::string, std::vector<std::string>>> ParseShardIndex(const std::string& text,
                                                                       const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return DataLoss(source + ": not a JSON object");
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) return DataLoss(source + ": missing weight_map object");
  std::map<std::string, std::vector<std::string>> by_file;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string()) return DataLoss(source + ": weight_map entry " + it.key() + " is not a string");
    const std::string file = it.value().get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos ||
        file == "." || file == "..") {
      return DataLoss(source + ": weight_map entry " + it.key() + " names a bad file '" + file + "'");
    }
    by_file[file].push_back(it.key());
  }
  if (by_file.empty()) return DataLoss(source + ": weight_map is empty");
  return by_file;
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  auto ckpt = std::unique_ptr<Checkpoint>(new Checkpoint());
  ckpt->dir_ = dir;
  const std::string index_path = JoinPath(dir, "model.safetensors.index.json");
  const std::string single_path = JoinPath(dir, "model.safetensors");
  if (FileExists(index_path)) {
    G4_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path, kMaxIndexBytes));
    G4_ASSIGN_OR_RETURN(auto by_file, ParseShardIndex(text, index_path));
    for (const auto& [file, names] : by_file) {
      G4_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenFileReader(JoinPath(dir, file)));
      G4_RETURN_IF_ERROR(ckpt->AddFile(std::move(reader), &names));
    }
  } else if (FileExists(single_path)) {
    G4_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenFileReader(single_path));
    G4_RETURN_IF_ERROR(ckpt->AddFile(std::move(reader), nullptr));
  } else {
    return NotFound(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  return ckpt;
}

}  // namespace g4

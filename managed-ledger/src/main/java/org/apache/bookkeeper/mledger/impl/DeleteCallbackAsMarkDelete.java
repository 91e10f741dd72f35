/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.bookkeeper.mledger.impl;

import org.apache.bookkeeper.mledger.AsyncCallbacks.DeleteCallback;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;

/** An individual ack's callback, held among mark-delete operations until a write makes it durable. */
final class DeleteCallbackAsMarkDelete implements MarkDeleteCallback {
    private final DeleteCallback callback;

    DeleteCallbackAsMarkDelete(DeleteCallback callback) {
        this.callback = callback;
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        callback.deleteComplete(ctx);
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        callback.deleteFailed(exception, ctx);
    }
}

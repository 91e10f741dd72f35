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

import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.bookkeeper.mledger.ManagedLedgerException;

/**
 * The callback of the cursor's own write of its latest state (a flush, the write of held acks). The write is
 * issued later than the mark-delete whose properties it carries: its record's properties are as old as that
 * mark-delete ({@code propertiesSeq}), not as new as the write, so that it neither completes nor replaces a
 * newer mark-delete at the same position given other properties.
 */
final class LatestStateWrite implements MarkDeleteCallback {
    final long propertiesSeq;
    private final MarkDeleteCallback delegate;

    LatestStateWrite(long propertiesSeq, MarkDeleteCallback delegate) {
        this.propertiesSeq = propertiesSeq;
        this.delegate = delegate;
    }

    /**
     * The sequence number an op's properties date from: the latest state's for its write, the ack's for an ack
     * (AppliedAck#propertiesSeqOr), else the op's own ({@code seq}).
     */
    static long propertiesSeqOf(MarkDeleteCallback callback, long seq) {
        if (callback instanceof LatestStateWrite) {
            return ((LatestStateWrite) callback).propertiesSeq;
        }
        return callback instanceof AppliedAck ? ((AppliedAck) callback).propertiesSeqOr(seq) : seq;
    }

    @Override
    public void markDeleteComplete(Object ctx) {
        delegate.markDeleteComplete(ctx);
    }

    @Override
    public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
        delegate.markDeleteFailed(exception, ctx);
    }
}
